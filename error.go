package dbpilot

import (
	"errors"
	"fmt"
)

// Error codes, in the manner of Ben Johnson's wtf: adapters map their failures
// to one of these so that the CLI (exit status) and the HTTP API (status code)
// can answer without knowing the adapter.
const (
	ECONFLICT    = "conflict"    // already exists, in use
	EINTERNAL    = "internal"    // a bug or an unexpected state
	EINVALID     = "invalid"     // bad input
	ENOTFOUND    = "not_found"   // no such sandbox, cluster, file
	EUNAVAIL     = "unavailable" // cannot connect, timed out, server gone
	EAUTH        = "auth"        // access denied
	EUNSUPPORTED = "unsupported" // flavor/version cannot do this
)

// Error is an error with a code and a one-line, user-facing message.
type Error struct {
	Code    string
	Message string
	Err     error // optional cause
	// Errno is the number of the MySQL error packet the server sent, when
	// the failure is the server's answer (access denied, account locked, too
	// many connections, host blocked, ...); 2026 (the client's
	// CR_SSL_CONNECTION_ERROR) when the server greeted dbpilot but TLS
	// failed (its certificate does not verify, it has no TLS): the server
	// is alive all the same; 0 for a transport failure (refused, reset,
	// timed out, no greeting) or an error of dbpilot's own.
	Errno uint16
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError returns an *Error with code and message whose cause is err.
func WrapError(code string, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ServerErrno returns the number of the MySQL error packet behind err, or 0
// when the failure is not the server's answer. A server that answers with any
// error packet is alive: only transport failures vote for dead.
func ServerErrno(err error) uint16 {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return 0
		}
		if e.Errno != 0 {
			return e.Errno
		}
		err = e.Err
	}
	return 0
}
