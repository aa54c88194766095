package pgbench

// WaitEventCPU is the key of a sampled backend that waits on nothing: with
// no wait event in pg_stat_activity it is running (or runnable) on a CPU.
const WaitEventCPU = "CPU"

// WaitEventKey returns the key under which a sampled backend is counted:
// "TYPE:EVENT" from pg_stat_activity's wait_event_type and wait_event
// ("IO:DataFileRead", "LWLock:WALWrite", "IPC:SyncRep"), or WaitEventCPU
// when wait_event_type is "" (NULL). A type without an event gives the type
// alone.
func WaitEventKey(waitEventType, waitEvent string) string {
	switch {
	case waitEventType == "":
		return WaitEventCPU
	case waitEvent == "":
		return waitEventType
	default:
		return waitEventType + ":" + waitEvent
	}
}

// Shares returns each key's share of all the samples: its count divided by
// the sum of the counts, so the shares sum to 1 within rounding. Negative
// counts count as 0. An empty input, or one whose counts sum to 0, gives an
// empty map.
func Shares(counts map[string]int64) map[string]float64 {
	var total int64
	for _, c := range counts {
		total += max(c, 0)
	}
	shares := make(map[string]float64, len(counts))
	if total == 0 {
		return shares
	}
	for k, c := range counts {
		shares[k] = float64(max(c, 0)) / float64(total)
	}
	return shares
}
