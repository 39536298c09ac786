// Package safefile reads the files usher reads on its own filesystem (the
// configuration, a users-to-groups table, a CA bundle): only a regular file,
// never a device or a pipe (looked at without opening it, then opened without
// blocking and looked at again), read within Timeout and up to a cap its
// caller sizes for its purpose. No error quotes the file's content.
package safefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// Timeout bounds the reading of one file.
var Timeout = 5 * time.Second

// ErrNotRegular is the rule a device, a pipe, a socket or a directory breaks.
var ErrNotRegular = errors.New("not a regular file")

// Read returns the content of the regular file at path, of at most limit
// bytes, read within Timeout. With legacy above 0, a file that breaks
// these rules but that releases before them read (a file of any type, of
// up to legacy bytes) is still read, within Timeout, and broke says which
// rule it breaks, for the caller to warn about.
func Read(path string, limit, legacy int64) (data []byte, broke, err error) {
	f, st, err := open(path, max(limit, legacy), legacy > 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	// Room for the whole file, and for the read that finds its end.
	b := bytes.NewBuffer(make([]byte, 0, min(st.Size(), max(limit, legacy))+bytes.MinRead))
	if _, err := copyLimited(b, f, path, max(limit, legacy)); err != nil {
		return nil, nil, err
	}
	switch {
	case !st.Mode().IsRegular():
		broke = &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	case int64(b.Len()) > limit:
		broke = tooLarge(path, limit)
	}
	return b.Bytes(), broke, nil
}

// tooLarge is the error of a file above limit. Errors are *os.PathError,
// so that a caller can leave the path out.
func tooLarge(path string, limit int64) error {
	return &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("larger than the %d byte limit", limit)}
}

// open opens path without blocking (a FIFO without a writer would block
// the open) and, unless irregular, only when it is a regular file; a
// regular file above limit is not opened.
func open(path string, limit int64, irregular bool) (*os.File, os.FileInfo, error) {
	check := func(st os.FileInfo) error {
		switch {
		case !st.Mode().IsRegular() && !irregular:
			return &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
		case st.Mode().IsRegular() && st.Size() > limit:
			return tooLarge(path, limit)
		}
		return nil
	}
	st, err := os.Stat(path)
	if err == nil {
		err = check(st)
	}
	if err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	// Again: path may name another file by now.
	if st, err = f.Stat(); err == nil {
		err = check(st)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// copyLimited copies f to w within Timeout; more than limit bytes is an
// error. The deadline is the file's read deadline where it has one (a
// pipe), and is checked between reads for every file.
func copyLimited(w io.Writer, f *os.File, path string, limit int64) (int64, error) {
	end := time.Now().Add(Timeout)
	_ = f.SetReadDeadline(end) // os.ErrNoDeadline for a regular file
	n, err := io.Copy(w, io.LimitReader(deadlineReader{f, end}, limit+1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return n, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("not read within %v", Timeout)}
	case err != nil:
		return n, err
	case n > limit:
		return n, tooLarge(path, limit)
	}
	return n, nil
}

type deadlineReader struct {
	f   *os.File
	end time.Time
}

func (r deadlineReader) Read(p []byte) (int, error) {
	if time.Now().After(r.end) {
		return 0, os.ErrDeadlineExceeded
	}
	return r.f.Read(p)
}
