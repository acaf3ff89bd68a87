package memjobs

import "time"

// SetClock lets tests age records.
func (s *Store) SetClock(now func() time.Time) { s.now = now }
