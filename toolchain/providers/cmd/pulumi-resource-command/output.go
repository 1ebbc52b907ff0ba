package main

import (
	"bytes"
	"io"
	"sync"
)

// output collects a script's stdout and stderr apart, and both interleaved (what an error quotes).
// The two streams are copied by two goroutines (os/exec's, or the SSH session's), hence the lock.
type output struct {
	mu                    sync.Mutex
	out, err, interleaved bytes.Buffer
}

func newOutput() *output { return &output{} }

type streamWriter struct {
	o      *output
	stream *bytes.Buffer
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	w.stream.Write(p)
	return w.o.interleaved.Write(p)
}

func (o *output) stdoutWriter() io.Writer { return streamWriter{o, &o.out} }
func (o *output) stderrWriter() io.Writer { return streamWriter{o, &o.err} }

func (o *output) stdout() string   { o.mu.Lock(); defer o.mu.Unlock(); return o.out.String() }
func (o *output) stderr() string   { o.mu.Lock(); defer o.mu.Unlock(); return o.err.String() }
func (o *output) combined() string { o.mu.Lock(); defer o.mu.Unlock(); return o.interleaved.String() }
