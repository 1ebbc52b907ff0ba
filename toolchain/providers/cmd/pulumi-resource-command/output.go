package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// output collects a script's stdout and stderr apart, and both interleaved (what an error quotes),
// and shows the lines of the streams `logging` names under the resource as they arrive. The two
// streams are copied by two goroutines (os/exec's, or the SSH session's), hence the lock.
type output struct {
	show        func(line string)
	mu          sync.Mutex
	out, err    stream
	interleaved bytes.Buffer
}

// stream is one of a script's two outputs: all of it, and whether its lines are shown, with the
// unfinished last line until its newline arrives.
type stream struct {
	text    bytes.Buffer
	shown   bool
	partial string
}

// newOutput shows each line of the streams asked for with show.
func newOutput(show func(line string), showStdout, showStderr bool) *output {
	return &output{show: show, out: stream{shown: showStdout}, err: stream{shown: showStderr}}
}

type streamWriter struct {
	o *output
	s *stream
}

func (w streamWriter) Write(p []byte) (int, error) {
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	w.s.text.Write(p)
	if w.s.shown {
		text := w.s.partial + string(p)
		for i := strings.IndexByte(text, '\n'); i >= 0; i = strings.IndexByte(text, '\n') {
			o.show(text[:i])
			text = text[i+1:]
		}
		w.s.partial = text
	}
	return o.interleaved.Write(p)
}

// flush shows the last lines when they did not end with a newline.
func (o *output) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range []*stream{&o.out, &o.err} {
		if s.partial != "" {
			o.show(s.partial)
			s.partial = ""
		}
	}
}

func (o *output) stdoutWriter() io.Writer { return streamWriter{o, &o.out} }
func (o *output) stderrWriter() io.Writer { return streamWriter{o, &o.err} }

func (o *output) stdout() string   { o.mu.Lock(); defer o.mu.Unlock(); return o.out.text.String() }
func (o *output) stderr() string   { o.mu.Lock(); defer o.mu.Unlock(); return o.err.text.String() }
func (o *output) combined() string { o.mu.Lock(); defer o.mu.Unlock(); return o.interleaved.String() }
