package artifact

import "time"

// The stages of an artifact's pipeline, in order (EVE's download, verify, then launch);
// Failed ends it.
const (
	StageResolving   = "Resolving"   // the version or tag being pinned to a digest
	StageDownloading = "Downloading" // its bytes being fetched (Downloaded of Size)
	StageVerifying   = "Verifying"   // the bytes checked against the digest
	StageStored      = "Stored"      // in the content-addressed store: nothing is fetched again
	StageRendered    = "Rendered"    // rendered into the revision
	StageFailed      = "Failed"      // permanently: Error says why; nothing was rendered from it
)

// ProfileKey is the key of an app's profile archive among a context's artifacts (an
// app's chart is keyed by the app's name).
func ProfileKey(app string) string { return "profile:" + app }

// Resolved is a source pinned: what the revision deploys, whatever a tag does later.
type Resolved struct {
	App       string `json:"app" bson:"app"`
	Transport string `json:"transport" bson:"transport"`
	// Ref is what is fetched: an OCI reference with its digest, or the archive's URL.
	Ref     string `json:"ref" bson:"ref"`
	Version string `json:"version,omitempty" bson:"version,omitempty"` // the chart's version, when the source says
	// Digest pins the source: the OCI manifest's digest, or the archive's sha256.
	Digest string `json:"digest" bson:"digest"`
	// Blob is the archive's sha256, its key in the Store (for an OCI chart, known once
	// downloaded unless the Store has it from an earlier fetch).
	Blob      string `json:"blob,omitempty" bson:"blob,omitempty"`
	Size      int64  `json:"size,omitempty" bson:"size,omitempty"`
	PlainHTTP bool   `json:"plainHTTP,omitempty" bson:"plainHTTP,omitempty"`
	// Project whose credentials fetch it.
	Project string `json:"project" bson:"project"`
}

// Status is where one app's artifact stands in a revision (a context's header holds one
// per app whose chart comes by reference).
type Status struct {
	App        string    `json:"app" bson:"app"`
	Source     string    `json:"source" bson:"source"` // Source.Location
	Transport  string    `json:"transport" bson:"transport"`
	Stage      string    `json:"stage" bson:"stage"`
	Version    string    `json:"version,omitempty" bson:"version,omitempty"`
	Digest     string    `json:"digest,omitempty" bson:"digest,omitempty"`
	Blob       string    `json:"blob,omitempty" bson:"blob,omitempty"`
	Size       int64     `json:"size,omitempty" bson:"size,omitempty"`
	Downloaded int64     `json:"downloaded,omitempty" bson:"downloaded,omitempty"`
	Cached     bool      `json:"cached,omitempty" bson:"cached,omitempty"` // found in the store: not downloaded
	Signer     string    `json:"signer,omitempty" bson:"signer,omitempty"` // signed its provenance (the worker's keyring verified it): name <email>
	Retrying   bool      `json:"retrying,omitempty" bson:"retrying,omitempty"`
	Attempts   int32     `json:"attempts,omitempty" bson:"attempts,omitempty"`
	Error      string    `json:"error,omitempty" bson:"error,omitempty"`
	NextTry    time.Time `json:"nextTry,omitzero" bson:"nextTry,omitempty"`
	Updated    time.Time `json:"updated" bson:"updated"`
}

// Image is a container image a revision pinned: as the objects named it, and its digest.
type Image struct {
	Image  string `json:"image" bson:"image"`
	Digest string `json:"digest" bson:"digest"`
}
