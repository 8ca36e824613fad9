package workers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
)

// buildID names this build of the worker in Temporal (the worker version stamped on its
// workflow tasks). Left unset, the SDK hashes the whole executable as the worker starts:
// 0.2–0.7 s of a restarted worker's start on a loaded 2-core machine (bench-restart,
// 2026-11-30), all of it before its predecessor's work is retried. The Go build info
// (module versions, VCS revision) and the executable's size and time name the build as well.
var buildID = sync.OnceValue(func() string {
	h := sha256.New()
	if bi, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprint(h, bi.String())
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			fmt.Fprint(h, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return "temco-" + hex.EncodeToString(h.Sum(nil))[:16]
})
