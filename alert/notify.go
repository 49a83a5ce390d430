package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/dbpilot/dbpilot"
)

// Notifier is told of alerts that fire or resolve. Notify must return
// quickly: the evaluator waits for it.
type Notifier interface {
	Notify(ctx context.Context, alerts []*dbpilot.Alert) error
}

// LogNotifier logs each notification.
type LogNotifier struct{ log *slog.Logger }

// NewLogNotifier returns a notifier that logs to l (nil: slog.Default()).
func NewLogNotifier(l *slog.Logger) *LogNotifier {
	if l == nil {
		l = slog.Default()
	}
	return &LogNotifier{log: l}
}

// Notify logs each alert: firing critical ones as errors, other firing ones
// as warnings, resolutions as information.
func (n *LogNotifier) Notify(ctx context.Context, alerts []*dbpilot.Alert) error {
	for _, a := range alerts {
		level := slog.LevelInfo
		if a.State == dbpilot.AlertFiring {
			level = slog.LevelWarn
			if a.Severity == SeverityCritical {
				level = slog.LevelError
			}
		}
		args := []any{"alert", a.Rule, "state", a.State, "severity", a.Severity,
			"instance", a.Labels["instance"], "cluster", a.Labels["cluster"], "summary", a.Summary}
		if a.Suppressed != "" {
			args = append(args, "reason", a.Suppressed)
		}
		n.log.Log(ctx, level, "alert", args...)
	}
	return nil
}

// Webhook defaults.
const (
	DefaultWebhookTimeout = 5 * time.Second
	// WebhookQueue is how many notifications wait to be sent; more are
	// dropped (and the drop logged).
	WebhookQueue = 256
)

// webhookRetryDelay separates the two attempts of a send.
var webhookRetryDelay = time.Second

// WebhookPayload is the JSON body a webhook receives.
type WebhookPayload struct {
	Alerts []*dbpilot.Alert `json:"alerts"`
}

// WatchdogPayload is the JSON body a webhook receives for the query
// watchdog: the matches and kill results of one evaluation of one instance.
type WatchdogPayload struct {
	WatchdogEvents []WatchdogEvent `json:"watchdog_events"`
}

// WatchdogEvent is one session a watchdog rule matched, with the decision
// taken (log, kill, dry_run, rate_limited) and, for a kill, its result
// (killed, gone, denied, failed).
type WatchdogEvent struct {
	Time     time.Time       `json:"time"`
	Instance string          `json:"instance"`
	Cluster  string          `json:"cluster"`
	Rule     string          `json:"rule"`
	Action   string          `json:"action"`
	Decision string          `json:"decision"`
	Result   string          `json:"result,omitempty"`
	Session  WatchdogSession `json:"session"`
	Reasons  []string        `json:"reasons"`
}

// WatchdogSession is the matched session as the processlist showed it.
type WatchdogSession struct {
	ID          uint64  `json:"id"`
	User        string  `json:"user"`
	Host        string  `json:"host"`
	DB          string  `json:"db"`
	Command     string  `json:"command"`
	State       string  `json:"state"`
	Info        string  `json:"info"`
	TimeSeconds float64 `json:"time_s"`
}

// Webhook posts notifications as JSON (WebhookPayload) to a URL. Notify only
// queues: a goroutine, running while there is something to send, posts each
// batch with a timeout and one retry, so a slow or dead receiver never holds
// up the evaluator.
type Webhook struct {
	url     string
	timeout time.Duration
	client  *http.Client

	mu      sync.Mutex
	log     *slog.Logger
	queue   [][]byte
	running bool
	closed  bool
	done    chan struct{} // closed when the sender goroutine exits
	ctx     context.Context
	cancel  context.CancelFunc
}

// NewWebhook returns a webhook notifier posting to url, each attempt bounded
// by timeout (DefaultWebhookTimeout when 0).
func NewWebhook(url string, timeout time.Duration) *Webhook {
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Webhook{
		url: url, timeout: timeout, ctx: ctx, cancel: cancel,
		client: &http.Client{
			Timeout:       timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// SetLogger sets where send failures and drops are logged.
func (w *Webhook) SetLogger(l *slog.Logger) {
	w.mu.Lock()
	w.log = l
	w.mu.Unlock()
}

// defaultLogger is called by NewEvaluator: the evaluator's logger unless one
// was set.
func (w *Webhook) defaultLogger(l *slog.Logger) {
	w.mu.Lock()
	if w.log == nil {
		w.log = l
	}
	w.mu.Unlock()
}

func (w *Webhook) logger() *slog.Logger {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return slog.Default()
	}
	return w.log
}

// Notify queues alerts for sending; it fails, dropping them, when the queue
// is full or the webhook closed.
func (w *Webhook) Notify(ctx context.Context, alerts []*dbpilot.Alert) error {
	if len(alerts) == 0 {
		return nil
	}
	body, err := json.Marshal(WebhookPayload{Alerts: alerts})
	if err != nil {
		return fmt.Errorf("alert webhook: encode: %w", err)
	}
	return w.enqueue(body, len(alerts), "alert notifications")
}

// NotifyWatchdog queues one WatchdogPayload of events, like Notify: it never
// blocks, and fails, dropping them, when the queue is full or the webhook
// closed.
func (w *Webhook) NotifyWatchdog(ctx context.Context, events []WatchdogEvent) error {
	if len(events) == 0 {
		return nil
	}
	body, err := json.Marshal(WatchdogPayload{WatchdogEvents: events})
	if err != nil {
		return fmt.Errorf("alert webhook: encode: %w", err)
	}
	return w.enqueue(body, len(events), "watchdog events")
}

// enqueue queues a body carrying n items (what, for errors) and starts the
// sender if it is not running.
func (w *Webhook) enqueue(body []byte, n int, what string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("alert webhook %s: closed; %d %s dropped", w.url, n, what)
	}
	if len(w.queue) >= WebhookQueue {
		return fmt.Errorf("alert webhook %s: %d notifications wait already; %d %s dropped", w.url, len(w.queue), n, what)
	}
	w.queue = append(w.queue, body)
	if !w.running {
		w.running = true
		w.done = make(chan struct{})
		go w.send(w.done)
	}
	return nil
}

// send posts queued bodies until the queue is empty, then exits.
func (w *Webhook) send(done chan struct{}) {
	defer close(done)
	for {
		w.mu.Lock()
		if len(w.queue) == 0 || w.ctx.Err() != nil {
			w.running = false
			w.mu.Unlock()
			return
		}
		body := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()

		err := w.post(body)
		if err != nil && w.ctx.Err() == nil {
			select {
			case <-w.ctx.Done():
			case <-time.After(webhookRetryDelay):
				err = w.post(body)
			}
		}
		if err != nil {
			w.logger().Warn("alert webhook", "url", w.url, "error", err)
		}
	}
}

// post sends one body; a 2xx answer is success.
func (w *Webhook) post(body []byte) error {
	ctx, cancel := context.WithTimeout(w.ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "dbpilot")
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// Close refuses further notifications, waits up to the timeout for the
// queued ones to be sent, then abandons the rest.
func (w *Webhook) Close() error {
	w.mu.Lock()
	w.closed = true
	running, done := w.running, w.done
	w.mu.Unlock()
	if running {
		t := time.NewTimer(w.timeout)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	w.cancel()
	if running {
		<-done
	}
	w.mu.Lock()
	dropped := len(w.queue)
	w.queue = nil
	w.mu.Unlock()
	if dropped > 0 {
		return fmt.Errorf("alert webhook %s: %d notifications not sent at close", w.url, dropped)
	}
	return nil
}
