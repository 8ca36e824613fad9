package store

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Callers that ask at once share a read, but none is answered with a read that began
// before it asked: one that comes during a read waits for the next, and every caller that
// comes meanwhile shares that one.
func TestFlightsNeverAnswerWithAnEarlierRead(t *testing.T) {
	var fs Flights
	var reads atomic.Int32
	release := make(chan struct{})
	read := func(context.Context) (any, error) {
		n := reads.Add(1)
		if n == 1 {
			<-release
		}
		return n, nil
	}
	ctx := context.Background()
	first := make(chan any)
	go func() { v, _ := fs.Do(ctx, "k", read); first <- v }()
	for reads.Load() == 0 { // the first read is under way
		time.Sleep(time.Millisecond)
	}
	var wg sync.WaitGroup
	later := make([]any, 5)
	for i := range later {
		wg.Go(func() { later[i], _ = fs.Do(ctx, "k", read) })
	}
	close(release)
	if v := <-first; v != int32(1) {
		t.Errorf("the first caller got read %v", v)
	}
	wg.Wait()
	for i, v := range later {
		if v == int32(1) {
			t.Errorf("caller %d, which came during the first read, got it", i)
		}
	}
}
