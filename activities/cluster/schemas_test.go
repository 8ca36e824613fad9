package cluster

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Clusters that miss the same schema document at once wait for one load and parse of it
// (a cold worker's first batch used to parse it once per cluster).
func TestOneLoadOfASchemaForClustersMissingItAtOnce(t *testing.T) {
	var s Schemas
	var loads atomic.Int32
	release := make(chan struct{})
	load := func() ([]byte, error) {
		loads.Add(1)
		<-release
		return []byte(`{"components":{"schemas":{}}}`), nil
	}
	var started, done sync.WaitGroup
	for range 50 {
		started.Add(1)
		done.Go(func() {
			started.Done()
			if _, err := s.doc("apis/apps/v1?hash=1", load); err != nil {
				t.Error(err)
			}
		})
	}
	started.Wait()
	close(release)
	done.Wait()
	if n := loads.Load(); n != 1 {
		t.Errorf("50 clusters missing one document loaded it %d times, want once", n)
	}
}
