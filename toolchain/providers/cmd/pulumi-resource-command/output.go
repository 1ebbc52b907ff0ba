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
	show                   func(line string)
	mu                     sync.Mutex
	out, err, interleaved  bytes.Buffer
	logOut, logErr         bool
	partialOut, partialErr string
}

// newOutput shows each line of the streams asked for with show.
func newOutput(show func(line string), logStdout, logStderr bool) *output {
	return &output{show: show, logOut: logStdout, logErr: logStderr}
}

type streamWriter struct {
	o      *output
	stderr bool
}

func (w streamWriter) Write(p []byte) (int, error) {
	o := w.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if w.stderr {
		o.err.Write(p)
		if o.logErr {
			o.partialErr = o.logLines(o.partialErr + string(p))
		}
	} else {
		o.out.Write(p)
		if o.logOut {
			o.partialOut = o.logLines(o.partialOut + string(p))
		}
	}
	return o.interleaved.Write(p)
}

// logLines shows every complete line of text and returns the unfinished rest.
func (o *output) logLines(text string) string {
	for {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			return text
		}
		o.show(text[:i])
		text = text[i+1:]
	}
}

// flush shows the last lines when they did not end with a newline.
func (o *output) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rest := range []*string{&o.partialOut, &o.partialErr} {
		if *rest != "" {
			o.show(*rest)
			*rest = ""
		}
	}
}

func (o *output) stdoutWriter() io.Writer { return streamWriter{o, false} }
func (o *output) stderrWriter() io.Writer { return streamWriter{o, true} }

func (o *output) stdout() string   { o.mu.Lock(); defer o.mu.Unlock(); return o.out.String() }
func (o *output) stderr() string   { o.mu.Lock(); defer o.mu.Unlock(); return o.err.String() }
func (o *output) combined() string { o.mu.Lock(); defer o.mu.Unlock(); return o.interleaved.String() }
