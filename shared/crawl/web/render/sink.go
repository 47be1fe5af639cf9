package render

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"sync"
	"time"
)

// sink is the browser's proxy: a loopback listener that reads each connection's first line,
// notes it, answers 403 and hangs up. A request only comes here when it escaped the CDP
// interception, so nothing the browser does reaches the network through it.
type sink struct {
	ln   net.Listener
	mu   sync.Mutex
	got  []string
	done sync.WaitGroup
}

func newSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{ln: ln}
	s.done.Add(1)
	go s.serve()
	return s, nil
}

func (s *sink) addr() string { return s.ln.Addr().String() }

func (s *sink) serve() {
	defer s.done.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.done.Add(1)
		go s.refuse(conn)
	}
}

func (s *sink) refuse(conn net.Conn) {
	defer s.done.Done()
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	line = strings.TrimSpace(line)
	if line == "" && err != nil {
		return // a preconnect the browser closed unused: nothing was asked
	}
	s.mu.Lock()
	s.got = append(s.got, line)
	s.mu.Unlock()
	_, _ = conn.Write([]byte("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
}

func (s *sink) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func (s *sink) close() error {
	err := s.ln.Close()
	s.done.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
