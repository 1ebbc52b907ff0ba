package main

import (
	"errors"
	"fmt"
	"strconv"
)

// scriptError is a script that ran and failed (as opposed to one that could not be started).
type scriptError struct {
	status string
	output string
	// secretScript: the command itself is secret, so it is not quoted.
	secretScript bool
}

func (e *scriptError) Error() string { return e.status }

// outputTail bounds the output an error quotes: the end of a failing script says why.
const outputTail = 2000

// describeFailure names the step and quotes its command and the end of its output, as upstream
// quotes them (all of the output), whatever else the script saw: a script must not print a secret.
// A secret command is the one thing withheld (upstream quotes it too): the engine logs errors in clear.
func describeFailure(key, script string, err error) error {
	var failed *scriptError
	if !errors.As(err, &failed) {
		return fmt.Errorf("%s: %w", key, err)
	}
	output := failed.output
	if len(output) > outputTail {
		output = "..." + output[len(output)-outputTail:]
	}
	quoted := strconv.Quote(script)
	if failed.secretScript {
		quoted = "[secret]"
	}
	return fmt.Errorf("%s: %s: running %s:\n%s", key, failed.status, quoted, output)
}
