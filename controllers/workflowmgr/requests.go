package workflowmgr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/temco/temco/internal/core/model"
)

// StatusQuery is what the status route's query parameters ask, with EMCO's names.
type StatusQuery struct {
	TemporalServer    string // "" is temco's own
	WorkflowID, RunID string
	QueryType         string
	QueryParams       []string
	WaitForResult     bool
	Describe          bool // runDescribeWfExec
	History           bool // getWfHistory
}

// ParseStatusQuery reads EMCO's status parameters; any other parameter is refused, as
// EMCO does.
func ParseStatusQuery(v url.Values) (StatusQuery, error) {
	var q StatusQuery
	for key, values := range v {
		value := ""
		if len(values) > 0 {
			value = values[0]
		}
		var err error
		switch key {
		case "temporalServer":
			q.TemporalServer = strings.Trim(value, `"'`) // EMCO strips quotes around it
		case "workflowID":
			q.WorkflowID = value
		case "runID":
			q.RunID = value
		case "queryType":
			q.QueryType = value
		case "queryParams":
			q.QueryParams = values
		case "waitForResult":
			q.WaitForResult, err = parseBool(key, value)
		case "runDescribeWfExec":
			q.Describe, err = parseBool(key, value)
		case "getWfHistory":
			q.History, err = parseBool(key, value)
		default:
			return q, fmt.Errorf("Unknown query parameter: %s", key)
		}
		if err != nil {
			return q, err
		}
	}
	return q, nil
}

func parseBool(key, value string) (bool, error) {
	switch value {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	}
	return false, fmt.Errorf("%s must be a boolean but is %s", key, value)
}

// CancelRequest is EMCO's cancel body.
type CancelRequest struct {
	Metadata *model.Metadata `json:"metadata,omitempty"`
	Spec     CancelSpec      `json:"spec"`
}

// CancelSpec names the run to cancel (the intent's workflow id when WorkflowID is empty)
// and how: a cancel request the workflow may handle, or a termination with a reason.
type CancelSpec struct {
	TemporalServer string `json:"temporalServer,omitempty"` // "" is temco's own
	WorkflowID     string `json:"workflowID,omitempty"`
	RunID          string `json:"runID,omitempty"`
	Terminate      bool   `json:"terminate,omitempty"`
	Reason         string `json:"reason,omitempty"`
	Details        []any  `json:"details,omitempty"`
}

// DecodeCancel reads and checks a cancel body: not empty, EMCO's keys (case-insensitive),
// names and workflow id in EMCO's syntax.
func DecodeCancel(r io.Reader) (CancelRequest, error) {
	var req CancelRequest
	data, err := io.ReadAll(r)
	if err != nil {
		return req, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return req, errors.New("empty workflow cancel request body")
	}
	if err := json.Unmarshal(data, &req); err != nil {
		return req, fmt.Errorf("malformed workflow cancel request: %v", err)
	}
	if req.Metadata != nil && req.Metadata.Name != "" {
		if err := model.ValidateName("metadata.name", req.Metadata.Name); err != nil {
			return req, err
		}
	}
	if req.Spec.WorkflowID != "" {
		// EMCO's name syntax, segment by segment: temco's ids are "/"-separated names
		// (Scope), as its status answers them.
		for _, seg := range strings.Split(req.Spec.WorkflowID, "/") {
			if err := model.ValidateName("spec.workflowID", seg); err != nil {
				return req, err
			}
		}
	}
	return req, nil
}
