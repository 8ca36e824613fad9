package events

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// TypePrefix makes an event's type a CloudEvents type (reverse-DNS, as the spec asks).
const TypePrefix = "io.temco."

// The headers of a signed delivery, as the Standard Webhooks specification names them, so
// that its libraries (and any HMAC-SHA256 code) verify temco's deliveries.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// cloudEvent is CloudEvents 1.0 in the structured JSON mode.
type cloudEvent struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`
	Source          string    `json:"source"`
	Type            string    `json:"type"`
	Time            time.Time `json:"time"`
	Subject         string    `json:"subject"`
	DataContentType string    `json:"datacontenttype"`
	Data            *Event    `json:"data"`
}

// CloudEvent is e's body for a cloudevents receiver: the event itself is the data; the
// source is the project's path (the fleet's, "/v2", for admins' own events).
func CloudEvent(e *Event) ([]byte, error) {
	source := "/v2"
	if e.Project != "" {
		source += "/projects/" + e.Project
	}
	return json.Marshal(cloudEvent{SpecVersion: "1.0", ID: e.ID, Source: source, Type: TypePrefix + e.Type,
		Time: e.Time.UTC(), Subject: e.Resource, DataContentType: "application/json", Data: e})
}

// Slack is e's body for a Slack-compatible incoming webhook.
func Slack(e *Event) ([]byte, error) {
	return json.Marshal(map[string]string{"text": "temco: " + e.Summary + " (" + e.Type + ")"})
}

// Sign returns the signature header of body sent as id at t with secret: "v1," and the
// base64 HMAC-SHA256 of "id.timestamp.body". A secret "whsec_<base64>" is that key, as
// Standard Webhooks' libraries take it; any other secret is its own bytes.
func Sign(secret, id string, t time.Time, body []byte) string {
	key := []byte(secret)
	if b64, ok := strings.CutPrefix(secret, "whsec_"); ok {
		if k, err := base64.StdEncoding.DecodeString(b64); err == nil {
			key = k
		}
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(t.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify reports whether header (a signature header, which may list several
// space-separated signatures) signs body sent as id at timestamp with secret: what a
// receiver does (the tests do it).
func Verify(secret, id, timestamp, header string, body []byte) bool {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	want := Sign(secret, id, time.Unix(ts, 0), body)
	for _, sig := range strings.Fields(header) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}
