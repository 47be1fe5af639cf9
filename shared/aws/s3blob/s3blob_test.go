package s3blob

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/crawlstack/crawlstack/shared/port/blob"
)

// fakeAPI is an API with function fields; methods not set panic if called.
type fakeAPI struct {
	API
	putObject func(*s3.PutObjectInput) (*s3.PutObjectOutput, error)
	getObject func(*s3.GetObjectInput) (*s3.GetObjectOutput, error)
}

func (f *fakeAPI) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return f.putObject(in)
}

func (f *fakeAPI) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return f.getObject(in)
}

func TestPutIfAbsent(t *testing.T) {
	tests := []struct {
		name      string
		answers   []error
		want      error
		wantCalls int
	}{
		{"Created", []error{nil}, nil, 1},
		{"Exists", []error{&smithy.GenericAPIError{Code: "PreconditionFailed"}}, blob.ErrExists, 1},
		{"ConflictThenExists", []error{
			&smithy.GenericAPIError{Code: "ConditionalRequestConflict"},
			&smithy.GenericAPIError{Code: "PreconditionFailed"},
		}, blob.ErrExists, 2},
		{"OtherError", []error{&smithy.GenericAPIError{Code: "AccessDenied"}}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			f := &fakeAPI{putObject: func(in *s3.PutObjectInput) (*s3.PutObjectOutput, error) {
				if aws.ToString(in.IfNoneMatch) != "*" {
					t.Errorf("IfNoneMatch = %q, want *", aws.ToString(in.IfNoneMatch))
				}
				if _, ok := in.Body.(io.Seeker); !ok {
					t.Errorf("body %T is not seekable", in.Body)
				}
				err := tt.answers[calls]
				calls++
				return &s3.PutObjectOutput{}, err
			}}
			err := New(f, "b").PutIfAbsent(context.Background(), "k", []byte("x"), "text/plain")
			switch {
			case tt.name == "OtherError":
				if err == nil || errors.Is(err, blob.ErrExists) {
					t.Errorf("err = %v, want the AccessDenied error", err)
				}
			case !errors.Is(err, tt.want) || (tt.want == nil && err != nil):
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if calls != tt.wantCalls {
				t.Errorf("%d PutObject calls, want %d", calls, tt.wantCalls)
			}
		})
	}
}

func TestGet(t *testing.T) {
	var gotRange string
	f := &fakeAPI{getObject: func(in *s3.GetObjectInput) (*s3.GetObjectOutput, error) {
		if aws.ToString(in.Key) == "missing" {
			return nil, &types.NoSuchKey{}
		}
		gotRange = aws.ToString(in.Range)
		return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader([]byte("567")))}, nil
	}}
	st := New(f, "b")
	if _, err := st.Get(context.Background(), "missing"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get missing: err = %v, want blob.ErrNotFound", err)
	}
	b, err := st.GetRange(context.Background(), "k", 5, 3)
	if err != nil || string(b) != "567" {
		t.Fatalf("GetRange = %q, %v", b, err)
	}
	if gotRange != "bytes=5-7" {
		t.Errorf("Range = %q, want bytes=5-7", gotRange)
	}
	for _, bad := range [][2]int64{{-1, 1}, {0, 0}} {
		if _, err := st.GetRange(context.Background(), "k", bad[0], bad[1]); err == nil {
			t.Errorf("GetRange(%d, %d) succeeded, want an error", bad[0], bad[1])
		}
	}
}
