// Package gitops is temco's git client for clusters reached through GitOps (Flux, Azure
// Arc, Anthos): temco writes what a cluster should run into a git repository the cluster
// pulls from, and reads back the status a monitor next to the cluster writes.
//
// A Writer keeps a bare clone of each repository under its Dir (go-git's filesystem
// storage, no work tree: a repository may hold thousands of clusters) and serialises
// the work on each. Its methods:
//
//	Commit(ctx, Remote, Change) (Result, error)        one commit, pushed without force
//	ReadFile(ctx, Remote, path) ([]byte, string, error) a file at the fetched head
//	ReadDir(ctx, Remote, dir) (map[string][]byte, string, error)
//	Contains(ctx, Remote, ancestor, descendant) (bool, error)
//
// A Change replaces path prefixes and writes files; Commit builds the new tree from the
// fetched one, rewriting only the directories it touches, and pushes. A push that lost a
// race with another writer is rebuilt on the new head (a few times, with jittered
// backoff); an unchanged tree makes no commit. Errors are either permanent
// (IsPermanent: a *RejectedError for a server's refusal — bad credentials, no such
// repository or branch, a protected branch or another hook refusing the push — or an
// invalid change) or transient (network, server errors). A refused push leaves the remote
// as it was, and nothing of it is pushed later: every Commit starts from the server's head.
//
// Remote.Token is secret: no String, log value or error of this package shows it.
//
// KustomizationStatus, StatusBranch and StatusPath are the status files' contract
// between the monitor (package monitor) and temco's workers. Package layout computes the
// Change of one deployment on one cluster.
package gitops
