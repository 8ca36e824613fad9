package main

import (
	"os"
	"strconv"
	"testing"

	"github.com/temco/temco/api"
)

func TestLiveReadsPerMinuteDefaultsAndReadsTheEnvironment(t *testing.T) {
	t.Setenv("TEMCO_LIVE_READS_PER_MINUTE", "") // restored after the test
	os.Unsetenv("TEMCO_LIVE_READS_PER_MINUTE")
	if got := apiCmd().Flags().Lookup("live-reads-per-minute").DefValue; got != strconv.Itoa(api.DefaultLiveReadsPerMinute) {
		t.Errorf("default --live-reads-per-minute %q, want %d", got, api.DefaultLiveReadsPerMinute)
	}
	t.Setenv("TEMCO_LIVE_READS_PER_MINUTE", "0")
	if got := apiCmd().Flags().Lookup("live-reads-per-minute").DefValue; got != "0" {
		t.Errorf("--live-reads-per-minute with TEMCO_LIVE_READS_PER_MINUTE=0 is %q", got)
	}
}
