package store

import (
	"errors"
	"net/url"
	"time"
)

// Code classifies store errors; the API maps each to an HTTP status.
type Code int

// Error codes.
const (
	ErrNotFound      Code = iota + 1 // no such resource
	ErrExists                        // a resource with this path exists
	ErrParentMissing                 // the parent does not exist
	ErrRefMissing                    // a referenced resource does not exist
	ErrHasChildren                   // delete refused: children exist
	ErrReferenced                    // delete refused: another resource references it
	ErrConflict                      // optimistic concurrency: written by someone else
	ErrBusy                          // a concurrent create/delete is in progress
)

// Error is a store error about the resource ID; Other names the related resource
// (the child or referrer that blocks a delete).
type Error struct {
	Code  Code
	ID    string
	Other string
	Msg   string

	deleting     bool      // ErrBusy because ID is being deleted
	pendingSince time.Time // ErrNotFound of a document inserted then, not committed
}

func (e *Error) Error() string {
	s := e.ID
	switch e.Code {
	case ErrNotFound, ErrParentMissing, ErrRefMissing:
		s += " not found"
		if !e.pendingSince.IsZero() {
			s += " (its create, begun at " + e.pendingSince.Format(time.RFC3339Nano) + ", has not committed)"
		}
	case ErrExists:
		s += " already exists"
	case ErrHasChildren:
		s += " has child " + e.Other
	case ErrReferenced:
		s += " is referenced by " + e.Other
	case ErrConflict:
		s += " was modified concurrently"
	}
	if e.Msg != "" {
		s += " " + e.Msg
	}
	return s
}

// CodeOf returns the Code of err, or 0 when err is not a store *Error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// PendingSince tells an ErrNotFound of a document whose create has not committed (its
// creator is still at it, or stopped mid-way: then a new create replaces it once it is a
// lease old) from one of a document that is not there: it returns when that create began.
func PendingSince(err error) (time.Time, bool) {
	var e *Error
	if errors.As(err, &e) && e.Code == ErrNotFound && !e.pendingSince.IsZero() {
		return e.pendingSince, true
	}
	return time.Time{}, false
}

// deletingOf returns the resource whose delete under way err reports, or "".
func deletingOf(err error) string {
	var e *Error
	if errors.As(err, &e) && e.deleting {
		return e.ID
	}
	return ""
}

// redactURI hides credentials of a connection string in messages.
func redactURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return "the MongoDB server"
	}
	return u.Redacted()
}
