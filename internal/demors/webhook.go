package demors

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Webhook delivery follows Standard Webhooks: the body is a CloudEvents 1.0 structured-mode
// JSON document, and the headers webhook-id, webhook-timestamp and webhook-signature carry
// "v1,<base64 HMAC-SHA256>" over "<webhook-id>.<webhook-timestamp>.<body>" keyed with the
// base64-decoded part of the whsec_ secret.
const (
	headerWebhookID        = "webhook-id"
	headerWebhookTimestamp = "webhook-timestamp"
	headerWebhookSignature = "webhook-signature"
	secretPrefix           = "whsec_"
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

func signWebhook(secret, id, timestamp string, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil || !strings.HasPrefix(secret, secretPrefix) {
		return "", errors.New("webhook secret is not a whsec_ base64 key")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// VerifyWebhook checks the Standard Webhooks signature headers of a delivery made by the
// demo resource server against the subscription's whsec_ secret.
func VerifyWebhook(secret string, h http.Header, body []byte) error {
	id, ts := h.Get(headerWebhookID), h.Get(headerWebhookTimestamp)
	if id == "" || ts == "" {
		return errors.New("missing webhook-id or webhook-timestamp header")
	}
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
		return errors.New("webhook-timestamp is not a unix time")
	}
	want, err := signWebhook(secret, id, ts, body)
	if err != nil {
		return err
	}
	for _, sig := range strings.Fields(h.Get(headerWebhookSignature)) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no webhook-signature matches")
}

// checkCallbackURL accepts https URLs, and http only on loopback hosts.
func checkCallbackURL(raw string) error {
	if len(raw) > 2048 {
		return errInvalid("callback_url", "callback_url is longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return errInvalid("callback_url", "callback_url must be an absolute http(s) URL without credentials")
	}
	host := u.Hostname()
	if u.Scheme == "https" || u.Scheme == "http" && (strings.EqualFold(host, "localhost") || net.ParseIP(host).IsLoopback()) {
		return nil
	}
	return errInvalid("callback_url", "callback_url must use https, or http on a loopback host (localhost, 127.0.0.1, ::1)")
}

// maxDeliveriesInFlight bounds the webhook deliveries running at once (one goroutine and
// one outbound connection each, for at most the 5 s client timeout). With no queue and no
// retry, an operation that would start one past the bound is refused with 409
// deliveries_busy before it changes anything, so floods cannot grow goroutines or sockets.
const maxDeliveriesInFlight = 16

// deliveryTimeout bounds one delivery: connect, send, and read the answer.
const deliveryTimeout = 5 * time.Second

// Reasons a delivery cannot start.
var (
	errDeliveriesClosed = errors.New("deliverer closed")
	errDeliveriesBusy   = errors.New("too many webhook deliveries in flight")
)

// deliverer posts signed events in the background; close waits for deliveries in flight.
type deliverer struct {
	log    *slog.Logger
	client *http.Client
	ctx    context.Context
	cancel context.CancelFunc
	slots  *semaphore.Weighted // one per delivery in flight, at most maxDeliveriesInFlight
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func newDeliverer(log *slog.Logger) *deliverer {
	ctx, cancel := context.WithCancel(context.Background())
	return &deliverer{
		log: log,
		client: &http.Client{
			Timeout:       deliveryTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		ctx:    ctx,
		cancel: cancel,
		slots:  semaphore.NewWeighted(maxDeliveriesInFlight),
	}
}

func (d *deliverer) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}

// deliveryResult is what the receiver answered.
type deliveryResult struct {
	status int
	body   []byte
	err    error
}

// reserve takes a delivery slot, waiting at most wait (while ctx lives): errDeliveriesClosed
// after close, errDeliveriesBusy if all are still held. A reserved slot must go to start.
func (d *deliverer) reserve(ctx context.Context, wait time.Duration) error {
	if !d.slots.TryAcquire(1) {
		if wait <= 0 {
			return errDeliveriesBusy
		}
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		defer context.AfterFunc(d.ctx, cancel)() // close ends the wait
		if err := d.slots.Acquire(ctx, 1); err != nil {
			if d.ctx.Err() != nil {
				return errDeliveriesClosed
			}
			return errDeliveriesBusy
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.slots.Release(1)
		return errDeliveriesClosed
	}
	d.wg.Add(1)
	return nil
}

// start posts one event asynchronously on a reserved slot and hands the outcome to done
// (may be nil). The slot frees up as the post ends, before done runs, so a callback
// waiting on a lock never holds a slot.
func (d *deliverer) start(callbackURL, secret, eventID string, body []byte, done func(deliveryResult)) {
	go func() {
		defer d.wg.Done()
		res := d.post(callbackURL, secret, eventID, body)
		d.slots.Release(1)
		if res.err != nil {
			d.log.Warn("demo RS webhook delivery failed", "event_id", eventID, "err", res.err)
		} else {
			d.log.Debug("demo RS webhook delivered", "event_id", eventID, "status", res.status)
		}
		if done != nil {
			done(res)
		}
	}()
}

func (d *deliverer) post(callbackURL, secret, eventID string, body []byte) deliveryResult {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig, err := signWebhook(secret, eventID, ts, body)
	if err != nil {
		return deliveryResult{err: err}
	}
	req, err := http.NewRequestWithContext(d.ctx, http.MethodPost, callbackURL, bytes.NewReader(body))
	if err != nil {
		return deliveryResult{err: err}
	}
	req.Header.Set("Content-Type", "application/cloudevents+json; charset=utf-8")
	req.Header.Set(headerWebhookID, eventID)
	req.Header.Set(headerWebhookTimestamp, ts)
	req.Header.Set(headerWebhookSignature, sig)
	resp, err := d.client.Do(req)
	if err != nil {
		return deliveryResult{err: err}
	}
	defer resp.Body.Close()
	res := deliveryResult{status: resp.StatusCode}
	res.body, res.err = io.ReadAll(io.LimitReader(resp.Body, 64<<10)) // the body is used only on success
	if res.err == nil && (resp.StatusCode < 200 || resp.StatusCode > 299) {
		res.err = fmt.Errorf("receiver answered %d", resp.StatusCode)
	}
	return res
}
