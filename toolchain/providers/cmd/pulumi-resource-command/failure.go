package main

import (
	"errors"
	"fmt"
)

// scriptError is a script that ran and failed (as opposed to one that could not be started).
type scriptError struct {
	status string
	output string
	// secret: the script saw a secret, so its command and output are not quoted.
	secret bool
}

func (e *scriptError) Error() string { return e.status }

// outputTail bounds the output an error quotes: the end of a failing script says why.
const outputTail = 2000

// describeFailure names the step and, unless anything the script saw is secret, quotes its command and
// the end of its output; a secret never reaches an error, which the engine logs in clear.
func describeFailure(key, script string, err error) error {
	var failed *scriptError
	if !errors.As(err, &failed) {
		return fmt.Errorf("%s: %w", key, err)
	}
	if failed.secret {
		return fmt.Errorf("%s: %s (the command and its output are withheld: its inputs are secret)", key, failed.status)
	}
	output := failed.output
	if len(output) > outputTail {
		output = "..." + output[len(output)-outputTail:]
	}
	return fmt.Errorf("%s: %s: running %q:\n%s", key, failed.status, script, output)
}
