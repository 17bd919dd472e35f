package runplot

import (
	"math"
	"slices"
	"time"

	"github.com/isoscope/isoscope/internal/history"
)

// maxBuckets bounds the time buckets of the plots over time; the bucket
// width is the smallest 1-2-5 step that keeps to it.
const maxBuckets = 60

// bucket is one slice of the run's time: what ended in it.
type bucket struct {
	// start and width are the bucket's place on the run's time axis; the
	// last bucket absorbs the remainder of the run, so it is between half
	// and one and a half widths long.
	start, width                time.Duration
	committed, aborted, unknown int
	// latencies are those of the committed transactions, sorted.
	latencies []time.Duration
}

// mid is the bucket's middle, in seconds since the start of the run.
func (b *bucket) mid() float64 { return (b.start + b.width/2).Seconds() }

// rate is n transactions per second of the bucket.
func (b *bucket) rate(n int) float64 { return float64(n) / b.width.Seconds() }

// percentile returns the nearest-rank q-quantile (0 < q ≤ 1) of the
// bucket's latencies; there must be some.
func (b *bucket) percentile(q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(b.latencies)))) - 1
	return b.latencies[min(max(i, 0), len(b.latencies)-1)]
}

// elapsed returns the run's length: Elapsed, or when the last transaction
// ended if that is later.
func (r *Run) elapsed() time.Duration {
	e := r.Elapsed
	for i := range r.Txns {
		e = max(e, r.Txns[i].End)
	}
	return e
}

// bucketWidth is the smallest 1-2-5 step of at least a millisecond that
// cuts elapsed into at most maxBuckets buckets.
func bucketWidth(elapsed time.Duration) time.Duration {
	for w := time.Millisecond; ; w *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if elapsed <= m*w*maxBuckets {
				return m * w
			}
		}
	}
}

// buckets sorts the run's transactions into time buckets by the instant
// they ended.
func (r *Run) buckets() []bucket {
	elapsed := r.elapsed()
	width := bucketWidth(elapsed)
	n := max(1, int(math.Round(float64(elapsed)/float64(width))))
	bs := make([]bucket, n)
	for i := range bs {
		bs[i].start, bs[i].width = time.Duration(i)*width, width
	}
	bs[n-1].width = max(elapsed-bs[n-1].start, time.Millisecond)
	for i := range r.Txns {
		t := &r.Txns[i]
		b := &bs[min(max(int(t.End/width), 0), n-1)]
		switch t.Status {
		case history.Committed:
			b.committed++
			b.latencies = append(b.latencies, t.End-t.Begin)
		case history.Aborted:
			b.aborted++
		default:
			b.unknown++
		}
	}
	for i := range bs {
		slices.Sort(bs[i].latencies)
	}
	return bs
}

// reasonCount is how many transactions ended, not committed, for one
// reason.
type reasonCount struct {
	reason           string
	aborted, unknown int
}

// reasons counts the transactions that did not commit by reason: the
// run's Reasons first, in their order, then any other reason found, the
// most frequent first.
func (r *Run) reasons() []reasonCount {
	at := map[string]int{}
	var out []reasonCount
	for _, why := range r.Reasons {
		if _, ok := at[why]; !ok {
			at[why] = len(out)
			out = append(out, reasonCount{reason: why})
		}
	}
	listed := len(out)
	for i := range r.Txns {
		t := &r.Txns[i]
		if t.Status == history.Committed {
			continue
		}
		why := t.Reason
		if why == "" {
			why = "unspecified"
		}
		j, ok := at[why]
		if !ok {
			j = len(out)
			at[why] = j
			out = append(out, reasonCount{reason: why})
		}
		if t.Status == history.Aborted {
			out[j].aborted++
		} else {
			out[j].unknown++
		}
	}
	slices.SortStableFunc(out[listed:], func(a, b reasonCount) int { return (b.aborted + b.unknown) - (a.aborted + a.unknown) })
	return out
}
