package server

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// BufferedWriter batches log and audit records into few writes: with one
// write system call per record, a busy webhook spent more time writing its
// audit log than deciding. Records reach the underlying writer when the
// buffer fills, at least every interval, and on Close. A crash can lose
// the records of the last interval.
type BufferedWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

// NewBufferedWriter buffers writes to w (64 KiB) and flushes them every
// interval (default 100ms) until Close.
func NewBufferedWriter(w io.Writer, interval time.Duration) *BufferedWriter {
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	b := &BufferedWriter{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.Flush()
			case <-b.stop:
				return
			}
		}
	}()
	return b
}

// Write buffers p.
func (b *BufferedWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

// Flush writes what is buffered.
func (b *BufferedWriter) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Flush()
}

// Close stops the periodic flush and flushes what is left.
func (b *BufferedWriter) Close() error {
	close(b.stop)
	<-b.done
	return b.Flush()
}
