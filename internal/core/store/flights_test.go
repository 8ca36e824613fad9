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

// Callers whose question is older than their call (a group's clusters, AsOf its start)
// share any read begun since, even one that has ended; a caller asking now never gets an
// ended read, and a write of this process (Invalidate) refuses every earlier read.
func TestFlightsAnswerAQuestionAsOfItsTime(t *testing.T) {
	var fs Flights
	var reads atomic.Int32
	read := func(context.Context) (any, error) { return reads.Add(1), nil }
	group := AsOf(context.Background(), time.Now())
	for i := range 3 {
		if v, err := fs.Do(group, "k", read); v != int32(1) || err != nil {
			t.Fatalf("the group's caller %d got read %v (%v), want the first", i, v, err)
		}
	}
	if v, _ := fs.Do(context.Background(), "k", read); v != int32(2) {
		t.Errorf("a caller asking now got read %v, want a new one", v)
	}
	if v, _ := fs.Do(AsOf(context.Background(), time.Now().Add(time.Hour)), "k", read); v != int32(3) {
		t.Errorf("a question from the future got read %v, want a new one", v)
	}
	fs.Invalidate("k")
	if v, _ := fs.Do(group, "k", read); v != int32(4) {
		t.Errorf("after a write, the group's caller got read %v, want a new one", v)
	}
	if v, _ := fs.Do(group, "k", read); v != int32(4) {
		t.Errorf("the group's next caller got read %v, want the one after the write", v)
	}
}
