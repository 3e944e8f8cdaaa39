// The match WebSocket: reconnects by itself (hello with the last seen seq), asks for a resync
// when a numbered message is missing (or a pong names a later seq that has not come a moment
// later), numbers commands (cseq, kept per match in sessionStorage) and estimates the server's
// clock offset from ping/pong round trips. A command not yet answered is sent again, with the
// same cseq, after a reconnect or when the server says it could not take it now (the server
// applies each cseq once).

const PING_EVERY_MS = 5_000;
// A reconnect waits between half its step and all of it ("equal jitter"): the players of a web
// process that died lose their sockets in one instant and must not all come back in another.
const BACKOFF_MS = [250, 500, 1_000, 2_000, 4_000];
const RETRY_CODES = ["busy", "time_unavailable", "unavailable", "rate_limited"]; // nothing changed
const RETRY_AFTER_MS = 300;
const RETRIES = 5;
// A pong names the match's last event as soon as it is written, before its broadcast has come
// through: only an event still missing this long after is a gap (docs/protocol.md).
const GAP_GRACE_MS = 2_000;

export class Connection {
  constructor(matchId, handlers) {
    this.matchId = matchId;
    this.handlers = handlers;
    this.ws = null;
    this.lastSeq = null;
    this.offsetMs = 0; // server time − local time
    this.bestRtt = Infinity;
    this.attempt = 0;
    this.pingTimer = null;
    this.gapCheck = null; // a timer: a pong named an event not seen yet
    this.cseqKey = `sb-cseq-${matchId}`;
    this.unanswered = null; // {message, retries}: the last command sent, until ack or error
    window.addEventListener("online", () => this.reconnectNow());
  }

  url() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    return `${scheme}://${location.host}/ws/match/${this.matchId}/`;
  }

  open() {
    this.status(this.lastSeq === null ? "connecting" : "reconnecting");
    const ws = new WebSocket(this.url());
    this.ws = ws;
    ws.addEventListener("open", () => {
      this.attempt = 0;
      this.status("connected");
      if (this.lastSeq !== null) this.sendRaw({ type: "hello", last_seq: this.lastSeq });
      if (this.unanswered) this.sendRaw(this.unanswered.message);
      this.ping();
      clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => this.ping(), PING_EVERY_MS);
    });
    ws.addEventListener("message", (event) => this.receive(JSON.parse(event.data)));
    ws.addEventListener("close", () => {
      if (this.ws !== ws) return;
      clearInterval(this.pingTimer);
      clearTimeout(this.gapCheck); // the hello after reconnecting asks for everything missed
      this.gapCheck = null;
      this.status(navigator.onLine === false ? "offline" : "reconnecting");
      const step = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
      const wait = step / 2 + (Math.random() * step) / 2;
      this.attempt += 1;
      this.retry = setTimeout(() => this.open(), wait);
    });
  }

  reconnectNow() {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) return;
    clearTimeout(this.retry);
    this.open();
  }

  status(name) {
    this.handlers.onStatus(name);
  }

  sendRaw(message) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify(message));
      return true;
    }
    return false;
  }

  ping() {
    this.sendRaw({ type: "ping", t: performance.now() });
  }

  nextCseq() {
    // Monotonic across reloads (sessionStorage) and new tabs (never below the wall clock).
    const stored = Number(sessionStorage.getItem(this.cseqKey) || 0);
    const next = Math.max(stored + 1, Date.now());
    sessionStorage.setItem(this.cseqKey, String(next));
    return next;
  }

  command(command) {
    const message = { ...command, cseq: this.nextCseq() };
    this.unanswered = { message, retries: 0 };
    if (!this.sendRaw(message)) {
      this.handlers.onError({ code: "offline" });
    }
  }

  receive(msg) {
    if (msg.type === "pong") {
      const rtt = performance.now() - msg.t;
      if (typeof msg.server_ms === "number" && rtt <= this.bestRtt * 1.5) {
        this.bestRtt = Math.min(this.bestRtt, rtt);
        this.offsetMs = msg.server_ms + rtt / 2 - Date.now();
      }
      // The last broadcast may be on its way, or lost with nothing after it to show the gap.
      if (this.lastSeq !== null && msg.seq > this.lastSeq && this.gapCheck === null) {
        this.gapCheck = setTimeout(() => {
          this.gapCheck = null;
          if (this.lastSeq < msg.seq) this.sendRaw({ type: "sync", last_seq: this.lastSeq });
        }, GAP_GRACE_MS);
      }
      return;
    }
    const pending = this.unanswered;
    if ((msg.type === "ack" || msg.type === "error") && pending && msg.cseq === pending.message.cseq) {
      if (msg.code === "stale_cseq" && pending.retries < RETRIES) {
        // Another device of this seat went further: number on from its last cseq and resend.
        sessionStorage.setItem(this.cseqKey, String(msg.last_cseq));
        pending.retries += 1;
        pending.message = { ...pending.message, cseq: this.nextCseq() };
        this.sendRaw(pending.message);
        return;
      }
      if (msg.type === "error" && RETRY_CODES.includes(msg.code ?? msg.reason) && pending.retries < RETRIES) {
        pending.retries += 1;
        setTimeout(() => this.unanswered === pending && this.sendRaw(pending.message), RETRY_AFTER_MS);
        return;
      }
      this.unanswered = null;
    }
    if (msg.type === "error") {
      this.handlers.onError(msg);
      return;
    }
    if (msg.type !== "state") return;
    const events = msg.events || [];
    if (!msg.resync && this.lastSeq !== null) {
      if (msg.seq <= this.lastSeq) return; // already seen
      if (events.length && events[0].seq !== this.lastSeq + 1) {
        // A broadcast went missing: ask for everything after what we saw.
        this.sendRaw({ type: "sync", last_seq: this.lastSeq });
        return;
      }
    }
    const fresh = this.lastSeq === null ? [] : events.filter((e) => e.seq > this.lastSeq);
    // The state sent on reconnecting skips events; the answer to hello brings them: wait for it.
    const skipsEvents = this.lastSeq !== null && !events.length && msg.seq > this.lastSeq;
    if (!skipsEvents) this.lastSeq = Math.max(this.lastSeq ?? 0, msg.seq);
    this.handlers.onState(msg, fresh);
  }
}
