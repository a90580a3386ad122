package transport

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/inflight"
	"github.com/pdpp-mcp/pdpp-mcp/internal/mcpserver/metrics"
)

// The line of token checks. A bearer without a good verdict is checked by
// Authenticate, and a check's cost (an RS read over the checks' own few RS
// connections) is shared by people with a new or refreshed token and
// strangers with made-up ones alike. k places handed out first come, first
// served are filled by k+1 networks, so checks wait in a fair line instead,
// and one is refused only when its own network's queue is full.
//
//   - At most max checks run at once (MaxUnverifiedRequests). A check waits
//     in a queue: a stranger's network's (see checkNetwork), a person's
//     address's (see knownPlaces). Turns go round the waiting queues, one
//     check per queue per round (deficit round robin with equal costs: each
//     check is one RS read). A queue that starts waiting with no place in
//     the round (a sparse one: a client with one new token) goes before the
//     round's queues (a flood), as new flows do in FQ-CoDel (RFC 8290).
//     Once served, a queue keeps a place at the round's end, even with
//     nothing left to wait for, until its turn comes again: a network that
//     sends one check after another is sparse at most once a round (so
//     strangers cannot look sparse to jump ahead), and sparse queues take
//     their first turns in the order they came.
//   - One queue runs at most max/4 checks at once (at least one), so a
//     network whose checks the RS holds long leaves the others turns.
//   - Places that showed a good token recently are people's: reserve of the
//     max places never go to strangers, and while both wait the others go
//     to each in turn, so a new login or refreshed token from such a place
//     waits behind people only.
//   - A queue holds at most perQueue checks, at most perClient of them from
//     one client address; one more is refused. All queues hold at most
//     maxWaiting: at that bound a newcomer pushes out the newest check of
//     the longest stranger queue (if longer than the newcomer's would be),
//     so a network that waits for little always gets in; one whose own
//     queue would be the longest is refused. Strangers never push out people.
//   - A check waits at most lineWait for its turn (then 503, retry), and
//     leaves at once when every request waiting for it has gone.
//
// The line's memory: at most maxWaiting tickets in queues and max running,
// and one entry per queue that waits, runs or holds a place in its round
// (maxWaiting with tickets, maxWaiting holders per class, max running:
// 3*maxWaiting+max). The requests waiting for a check (at most maxJoiners
// per ticket, each on its own connection) hold their bodies (at most
// MaxBodyBytes each) and goroutines: what the connection bounds allow.

// Refusal reasons of the line (data.reason of a 503, mcp_http_requests_shed_total
// and mcp_http_token_check_refusals_total).
const (
	// reasonUnverifiedBusy: every place in line is taken and the request's
	// network holds at least as many as any other (or was pushed out as
	// the network holding the most).
	reasonUnverifiedBusy = "unverified_busy"
	// reasonClientUnverifiedBusy: the request's address holds its share of
	// its network's queue (or a check in flight has as many requests
	// waiting for it as maxJoiners).
	reasonClientUnverifiedBusy = "client_unverified_busy"
	// reasonPrefixUnverifiedBusy: the request's network's queue is full.
	reasonPrefixUnverifiedBusy = "prefix_unverified_busy"
	// reasonUnverifiedWait: the check did not get its turn within lineWait.
	reasonUnverifiedWait = "unverified_wait_timeout"
)

// lineWait bounds a check's wait for its turn: with checkWait it stays under
// the request deadline (DefaultRequestTimeout) and a usual client timeout
// (30 to 60 s), so a request that waited too long still gets a typed answer.
const lineWait = 20 * time.Second

// checkNetwork is the network a stranger's check waits in line as. IPv4: a
// /24 (prefixKey), the smallest block routed between networks. IPv6: the
// /48 of a /64 key, not the /64: one end site is handed a /48 or a /56 (a
// /60 alone is 16 /64s, a /56 256 and a /48 65,536), and a free tunnel
// broker hands anyone a /48, so counting /64s (or /56s) would give one
// stranger thousands of queues. A /48 may hold other customers of the same
// provider: people among them who showed a good token wait in queues of
// their own address (an IPv6 /64, see clientKey), not their network's.
func checkNetwork(client netip.Prefix) netip.Prefix {
	if client.Addr().Is6() {
		p, _ := client.Addr().Prefix(48)
		return p
	}
	return prefixKey(client)
}

// lineKey names a queue: a network of strangers, or a person's address.
type lineKey struct {
	pfx    netip.Prefix
	person bool
}

// lineQueue is one network's (or person's) checks in line, oldest first.
type lineQueue struct {
	key     lineKey
	tickets []*ticket // at most perQueue
	running int       // this queue's checks running now
	inRing  bool      // in its class's round
	sparse  bool      // in the round's sparse list (then it has tickets)
	holder  bool      // in the round's busy list without tickets (a place kept)
}

// round is one class's queues in turn order: sparse ones first, then the
// others, of which holders keep a place without a ticket. Its lists hold at
// most its class's queues; holders at most maxWaiting (see trimHolders).
type round struct {
	sparse, busy []*lineQueue
	holders      int
}

// add puts q at the end of its list.
func (r *round) add(q *lineQueue, sparse bool) {
	q.inRing, q.sparse = true, sparse
	if sparse {
		r.sparse = append(r.sparse, q)
		return
	}
	r.busy = append(r.busy, q)
	if len(q.tickets) == 0 {
		q.holder = true
		r.holders++
	}
}

// remove takes q out of the round.
func (r *round) remove(q *lineQueue) {
	if !q.inRing {
		return
	}
	if q.holder {
		q.holder = false
		r.holders--
	}
	q.inRing = false
	list := &r.busy
	if q.sparse {
		list = &r.sparse
	}
	*list = slices.DeleteFunc(*list, func(x *lineQueue) bool { return x == q })
}

// ticket is one check in line, then running.
type ticket struct {
	q       *lineQueue // nil once refused, abandoned or done
	client  netip.Prefix
	since   time.Time
	ready   chan struct{} // closed when the check may run or is refused
	reason  string        // why it was refused; "" once granted
	running bool          // granted and not done yet
}

// checkLine is the line of token checks (see above). Safe for concurrent use.
type checkLine struct {
	mu         sync.Mutex
	max        int // checks run at once
	reserve    int // places only people take
	perQueue   int // tickets one queue holds
	perClient  int // tickets one address holds in its network's queue
	perRunning int // checks one queue runs at once
	maxWaiting int // tickets all queues hold

	running, strangersRunning int
	waiting                   int
	queues                    map[lineKey]*lineQueue // queues that wait or run: at most maxWaiting+max
	people, strangers         round                  // the rounds: queues with tickets, in turn order
	peopleNext                bool                   // whose turn a shared place is when both wait
	metrics                   *metrics.Metrics
}

// newCheckLine returns a line with the bounds named above.
func newCheckLine(places, reserve, perQueue, perClient, maxWaiting int, m *metrics.Metrics) *checkLine {
	return &checkLine{max: places, reserve: min(reserve, places-1), perQueue: perQueue, perClient: perClient,
		perRunning: max(1, places/4), maxWaiting: maxWaiting, queues: map[lineKey]*lineQueue{}, metrics: m}
}

// join puts a check of client in line, as a person's or a stranger's: a
// ticket to wait on (see wait), or the reason it is refused.
func (l *checkLine) join(client netip.Prefix, person bool) (*ticket, string) {
	key := lineKey{pfx: client, person: person}
	if !person {
		key.pfx = checkNetwork(client)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queues[key]
	held := 0
	if q != nil {
		held = len(q.tickets)
		if held >= l.perQueue {
			return l.refuse(reasonPrefixUnverifiedBusy)
		}
		if !person && countClient(q.tickets, client) >= l.perClient {
			return l.refuse(reasonClientUnverifiedBusy)
		}
	}
	if l.waiting >= l.maxWaiting && !l.pushOut(held+1, person) {
		return l.refuse(reasonUnverifiedBusy)
	}
	if q == nil {
		q = &lineQueue{key: key}
		l.queues[key] = q
	}
	t := &ticket{q: q, client: client, since: time.Now(), ready: make(chan struct{})}
	q.tickets = append(q.tickets, t)
	l.waiting++
	switch {
	case q.holder:
		q.holder = false
		l.roundOf(q).holders--
	case !q.inRing:
		l.roundOf(q).add(q, q.running == 0)
	}
	l.dispatch()
	return t, ""
}

func (l *checkLine) refuse(reason string) (*ticket, string) {
	l.metrics.TokenCheckRefused(reason)
	return nil, reason
}

// countClient counts the tickets of client.
func countClient(ts []*ticket, client netip.Prefix) int {
	n := 0
	for _, t := range ts {
		if t.client == client {
			n++
		}
	}
	return n
}

// pushOut makes room for a newcomer whose queue would then hold own by
// refusing the newest ticket of the longest stranger queue (of people too,
// for a person) holding more than own; false when there is none. One scan
// of the queues (at most maxWaiting+max).
func (l *checkLine) pushOut(own int, person bool) bool {
	var longest *lineQueue
	for _, q := range l.queues {
		if q.key.person && !person {
			continue
		}
		if longest == nil || len(q.tickets) > len(longest.tickets) ||
			len(q.tickets) == len(longest.tickets) && longest.key.person && !q.key.person {
			longest = q
		}
	}
	if longest == nil || len(longest.tickets) <= own {
		return false
	}
	t := longest.tickets[len(longest.tickets)-1]
	l.remove(t)
	t.reason = reasonUnverifiedBusy
	l.metrics.TokenCheckRefused(reasonUnverifiedBusy)
	close(t.ready)
	return true
}

// remove takes a waiting ticket out of its queue (and the queue out of its
// round when it is left with none).
func (l *checkLine) remove(t *ticket) {
	q := t.q
	q.tickets = slices.DeleteFunc(q.tickets, func(x *ticket) bool { return x == t })
	t.q = nil
	l.waiting--
	l.metrics.TokenCheckWaited(q.key.person, time.Since(t.since))
	if len(q.tickets) == 0 {
		if q.inRing && !q.sparse {
			// It keeps its place in the round, as one served does.
			q.holder = true
			l.roundOf(q).holders++
			l.trimHolders(l.roundOf(q))
			return
		}
		l.roundOf(q).remove(q)
		l.forget(q)
	}
}

// forget drops q when it has no ticket, no check running, no place in the round.
func (l *checkLine) forget(q *lineQueue) {
	if len(q.tickets) == 0 && q.running == 0 && !q.inRing && l.queues[q.key] == q {
		delete(l.queues, q.key)
	}
}

// next is the first queue of r that may run one more check (below
// perRunning), or nil. Holders it passes on the way have had their turn
// with nothing to run: they leave the round.
func (l *checkLine) next(r *round) *lineQueue {
	for _, q := range r.sparse {
		if q.running < l.perRunning {
			return q
		}
	}
	for i := 0; i < len(r.busy); {
		q := r.busy[i]
		switch {
		case q.holder:
			r.remove(q)
			l.forget(q)
		case q.running < l.perRunning:
			return q
		default:
			i++
		}
	}
	return nil
}

// trimHolders makes r keep at most maxWaiting holders: those nearest their
// turn leave first.
func (l *checkLine) trimHolders(r *round) {
	for i := 0; r.holders > l.maxWaiting && i < len(r.busy); {
		if q := r.busy[i]; q.holder {
			r.remove(q)
			l.forget(q)
			continue
		}
		i++
	}
}

// roundOf is the round of q's class.
func (l *checkLine) roundOf(q *lineQueue) *round {
	if q.key.person {
		return &l.people
	}
	return &l.strangers
}

// dispatch hands free places to waiting tickets, in turn (see above).
func (l *checkLine) dispatch() {
	for l.running < l.max {
		pq := l.next(&l.people)
		var sq *lineQueue
		if l.strangersRunning < l.max-l.reserve {
			sq = l.next(&l.strangers)
		}
		person, stranger := pq != nil, sq != nil
		switch {
		case person && (!stranger || l.peopleNext):
			l.grant(pq)
		case stranger:
			l.grant(sq)
		default:
			return
		}
		if person && stranger {
			l.peopleNext = !l.peopleNext
		}
	}
}

// grant runs the oldest ticket of q, which then takes its next turn at the
// end of its round's busy queues, even with no ticket left.
func (l *checkLine) grant(q *lineQueue) {
	t := q.tickets[0]
	q.tickets = q.tickets[1:]
	r := l.roundOf(q)
	r.remove(q)
	r.add(q, false)
	l.trimHolders(r)
	q.running++
	l.running++
	if !q.key.person {
		l.strangersRunning++
	}
	l.waiting--
	t.running = true
	l.metrics.TokenCheckWaited(q.key.person, time.Since(t.since))
	close(t.ready)
}

// wait blocks until t may run ("", then give it back with done) or is
// refused (the reason), or ctx ends first: then t leaves the line
// (reasonUnverifiedWait).
func (l *checkLine) wait(ctx context.Context, t *ticket) string {
	select {
	case <-t.ready:
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.q != nil && !t.running { // still waiting: ctx ended first
		l.remove(t)
		t.reason = reasonUnverifiedWait
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// Not when every request waiting for it has gone.
			l.metrics.TokenCheckRefused(reasonUnverifiedWait)
		}
		close(t.ready)
	}
	return t.reason
}

// done gives back the place of a granted ticket.
func (l *checkLine) done(t *ticket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !t.running {
		return
	}
	q := t.q
	t.q, t.running = nil, false
	q.running--
	l.running--
	if !q.key.person {
		l.strangersRunning--
	}
	l.forget(q)
	l.dispatch()
}

// depth returns the checks waiting in line and running now.
func (l *checkLine) depth() (waiting, running int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting, l.running
}

// knownPlaces remembers the client keys that presented a good token within
// knownTTL, so their new tokens wait in line as people's. When knownMax are
// kept, those expired go first, then the one seen longest ago (one scan of
// knownMax per new address into a full table).
type knownPlaces struct {
	mu sync.Mutex
	at map[netip.Prefix]time.Time // last good token seen; at most knownMax entries
}

// knownTTL is a working day, so a token refreshed every hour, or a new login
// the next morning from the same place, is a person's. knownMax bounds the
// addresses kept (about 100 bytes each).
const (
	knownTTL = 24 * time.Hour
	knownMax = 8192
)

// mark notes that client presented a good token now.
func (k *knownPlaces) mark(client netip.Prefix) {
	if !client.IsValid() {
		return
	}
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.at[client]; !ok && len(k.at) >= knownMax {
		var oldest netip.Prefix
		var oldestAt time.Time
		for p, at := range k.at {
			if now.Sub(at) >= knownTTL {
				delete(k.at, p)
				continue
			}
			if oldestAt.IsZero() || at.Before(oldestAt) {
				oldest, oldestAt = p, at
			}
		}
		if len(k.at) >= knownMax {
			delete(k.at, oldest)
		}
	}
	k.at[client] = now
}

// known reports whether client presented a good token within knownTTL.
func (k *knownPlaces) known(client netip.Prefix) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	at, ok := k.at[client]
	return ok && time.Since(at) < knownTTL
}

// One check per distinct bearer: requests with the same unverified bearer
// that arrive while its check waits or runs join it (a flight), so a
// client's first burst of parallel calls with a new token costs one check.
// Each waits under its own context holding nothing (no place, no slot
// until the verdict is good). The flight runs on its own goroutine, so it
// outlives any one request that gives up, and is cancelled (leaving the
// line or ending its check) when every request waiting for it has gone:
// golang.org/x/sync/singleflight cannot cancel a call when its last caller
// leaves, hence the few lines that count the waiters here.

// maxJoiners bounds the requests waiting for one flight: an honest client's
// burst is at most its connections, and the request slots a verdict lets in
// are fewer than this at the default of a tenant's share.
const maxJoiners = 256

// checkFlight is one bearer's check, shared by the requests waiting for it.
type checkFlight struct {
	key     [32]byte
	done    chan struct{} // closed when verdict or reason is set
	verdict AuthVerdict
	reason  string // the line's refusal, when no check ran
	waiters int    // requests waiting now; guarded by tokenChecks.mu
	cancel  context.CancelFunc
}

// tokenChecks are what unverified bearers' checks share: the line, the
// places known as people's, the requests waiting now
// (mcp_http_unverified_requests) and the flights, by the SHA-256 of the
// bearer (never the bearer itself): each holds a ticket or a running check,
// so at most maxWaiting+max (plus those being answered).
type tokenChecks struct {
	st      *settings
	line    *checkLine
	people  *knownPlaces
	waiting atomic.Int64
	mu      sync.Mutex
	flights map[[32]byte]*checkFlight
}

// newTokenChecks sizes the line from the settings: MaxUnverifiedRequests
// checks at once, a quarter of them (at least one) reserved for people;
// queues of half as many (at least 2), at most half a queue (at least one)
// from one address of a network; as many in line in all as the request
// slots (MaxConcurrentRequests, and at least one queue's worth).
func newTokenChecks(st *settings) *tokenChecks {
	places := st.MaxUnverifiedRequests
	perQueue := max(2, places/2)
	return &tokenChecks{
		st:      st,
		line:    newCheckLine(places, max(1, places/4), perQueue, max(1, perQueue/2), max(perQueue, st.MaxConcurrentRequests), st.Metrics),
		people:  &knownPlaces{at: map[netip.Prefix]time.Time{}},
		flights: map[[32]byte]*checkFlight{},
	}
}

// check gets the verdict for a bearer with no good verdict yet, counting the
// request while it waits, by joining its bearer's flight or starting one:
// the verdict, or the reason the line refused the check; AuthUnavailable
// when the request's own context ends first.
func (c *tokenChecks) check(ctx context.Context, client netip.Prefix, token string) (AuthVerdict, string) {
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	key := sha256.Sum256([]byte(token))
	c.mu.Lock()
	f := c.flights[key]
	switch {
	case f != nil && f.waiters >= maxJoiners:
		c.mu.Unlock()
		return AuthVerdict{}, reasonClientUnverifiedBusy
	case f != nil:
		f.waiters++
		c.mu.Unlock()
		c.st.Metrics.TokenCheckJoined()
	default:
		// The flight keeps the values of the request that started it (the
		// bearer, the client address) but not its cancellation.
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &checkFlight{key: key, done: make(chan struct{}), waiters: 1, cancel: cancel}
		c.flights[key] = f
		c.mu.Unlock()
		t, reason := c.line.join(client, c.people.known(client))
		if reason != "" {
			cancel()
			c.finish(f, AuthVerdict{}, reason)
			return AuthVerdict{}, reason
		}
		go c.fly(fctx, f, t, token)
	}
	select {
	case <-f.done:
		return f.verdict, f.reason
	case <-ctx.Done():
		c.leave(f)
		return AuthVerdict{Outcome: AuthUnavailable, Reason: "token_check_unavailable",
			Message: "the request ended before its token was checked"}, ""
	}
}

// fly waits for the flight's turn in line (at most lineWait), runs the
// check under checkWait, gives the place back and answers every request
// waiting for it.
func (c *tokenChecks) fly(ctx context.Context, f *checkFlight, t *ticket, token string) {
	defer f.cancel()
	wctx, cancel := context.WithTimeout(ctx, lineWait)
	reason := c.line.wait(wctx, t)
	cancel()
	if reason != "" {
		c.finish(f, AuthVerdict{}, reason)
		return
	}
	// Every unverified check's reads share one tenant of the bytes-in-flight
	// budget: strangers hold at most its share.
	cctx, cancel := context.WithTimeout(inflight.WithTenant(ctx, unverifiedTenant), checkWait)
	v := c.st.Authenticate(cctx, token)
	cancel()
	c.line.done(t)
	c.finish(f, v, "")
}

// finish answers the flight's requests and forgets it: the next request
// with the same bearer asks again (or finds its verdict cached).
func (c *tokenChecks) finish(f *checkFlight, v AuthVerdict, reason string) {
	c.mu.Lock()
	c.forget(f)
	c.mu.Unlock()
	f.verdict, f.reason = v, reason
	close(f.done)
}

// leave counts one request less waiting for f; with none left, f is
// cancelled and forgotten.
func (c *tokenChecks) leave(f *checkFlight) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f.waiters--
	if f.waiters == 0 {
		c.forget(f)
		f.cancel()
	}
}

// forget removes f from the flights, unless another flight took its key;
// the caller holds c.mu.
func (c *tokenChecks) forget(f *checkFlight) {
	if c.flights[f.key] == f {
		delete(c.flights, f.key)
	}
}
