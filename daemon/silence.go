package daemon

import (
	"slices"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// silence remembers, per replica channel, what its IO thread had received
// and since when, so that a running IO thread that receives nothing (no
// event, no heartbeat) is known to have a silent source: a hung primary is
// confirmed dead by its replicas in a few heartbeat periods instead of
// slave_net_timeout (topology.Silent).
type silence struct {
	mu   sync.Mutex
	seen map[silenceKey]silenceMark
}

type silenceKey struct {
	replica, source dbpilot.InstanceKey
	channel         string
}

type silenceMark struct {
	heartbeats uint64
	ioPos      string
	readPos    uint64
	since      time.Time
}

// note records the channels of the instances observed at now and sets,
// on copies of their channels, SourceSilentFor: how long each running IO
// thread has received nothing. A channel seen for the first time, or one
// whose IO thread does not run, is not silent.
func (s *silence) note(insts []*dbpilot.Instance, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[silenceKey]silenceMark{}
	}
	for _, in := range insts {
		if in == nil || !in.Reachable || len(in.Channels) == 0 {
			continue
		}
		at := in.ObservedAt
		if at.IsZero() {
			at = now
		}
		in.Channels = slices.Clone(in.Channels)
		for i := range in.Channels {
			ch := &in.Channels[i]
			k := silenceKey{replica: in.Key.Normalized(), source: ch.Source.Normalized(), channel: ch.Name}
			m := silenceMark{heartbeats: ch.ReceivedHeartbeats, ioPos: ch.GTIDIOPos, readPos: ch.ReadSourceLogPos, since: at}
			prev, ok := s.seen[k]
			if ok && ch.IORunning == dbpilot.IORunning && prev.heartbeats == m.heartbeats && prev.ioPos == m.ioPos && prev.readPos == m.readPos {
				if d := at.Sub(prev.since); d > 0 {
					ch.SourceSilentFor = d
				}
				continue // keep the time of the last change
			}
			ch.SourceSilentFor = 0
			s.seen[k] = m
		}
	}
}
