// The live lobby: one WebSocket (/ws/lobby/) carries snapshots in and requests out. No polling.
// Messages: {type:"lobby"} public state, {type:"personal"} my part, {type:"match_started", url},
// {type:"error", code, message}, {type:"ok"}. Snapshots carry `seq`; older ones are ignored.
// Every string shown is the page's language (lobby/views.py lobby_strings).
import { t } from "./i18n.js";

const root = document.getElementById("lobby-root");
const me = root.dataset.username;
const $ = (id) => document.getElementById(id);

let socket = null;
let retryMs = 500;
let lastSeq = { lobby: 0, personal: 0 };
let quickSince = null;
let quickTimer = null;
let myRating = Number($("my-rating").textContent) || 1500;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== false && value !== null && value !== undefined) node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function toast(text) {
  const box = $("toast");
  box.textContent = text;
  box.dataset.show = "1";
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.dataset.show = "0"; }, 3500);
}

function send(type, fields = {}) {
  if (!socket || socket.readyState !== WebSocket.OPEN) {
    toast(t("not_connected"));
    return;
  }
  socket.send(JSON.stringify({ type, ...fields }));
}

function playerLabel(player) {
  return el("span", {},
    el("a", { class: "seek-who", href: `/players/${encodeURIComponent(player.username)}/` }, player.username),
    " ", el("span", { class: "seek-meta" }, `${player.rating}${player.provisional ? "?" : ""}`));
}

function kindPill(rated) {
  return el("span", { class: rated ? "pill pill-rated" : "pill" }, rated ? t("rated") : t("casual"));
}

function rangeText(seek) {
  if (seek.rating_min === null && seek.rating_max === null) return t("any_rating");
  if (seek.rating_min === null) return t("up_to", { rating: seek.rating_max });
  if (seek.rating_max === null) return `${seek.rating_min}+`;
  return `${seek.rating_min}–${seek.rating_max}`;
}

function renderLobby(state) {
  $("count-seeks").textContent = state.seeks.length;
  $("count-waiting").textContent = state.waiting;
  $("count-live").textContent = state.live;
  $("seek-count").textContent = state.seeks.length ? `(${state.seeks.length})` : "";
  const list = $("seek-list");
  list.replaceChildren();
  if (!state.seeks.length) {
    list.append(el("li", { class: "empty" }, t("no_seeks")));
    return;
  }
  for (const seek of state.seeks) {
    const mine = seek.owner.username === me;
    const outside = (seek.rating_min !== null && myRating < seek.rating_min)
      || (seek.rating_max !== null && myRating > seek.rating_max);
    const action = mine
      ? el("button", { class: "button button-small button-quiet", type: "button",
          onclick: () => send("seek_cancel", { seek_id: seek.id }) }, t("cancel"))
      : el("button", { class: "button button-small", type: "button", disabled: outside,
          title: outside ? t("outside_range") : null,
          onclick: () => send("seek_accept", { seek_id: seek.id }) }, t("accept"));
    list.append(el("li", { "data-seek-id": seek.id },
      el("span", {}, playerLabel(seek.owner), " ", kindPill(seek.rated), " ",
        el("span", { class: "seek-meta" }, rangeText(seek))),
      el("span", { class: "seek-actions" }, action)));
  }
}

function renderChallenges(listId, challenges, incoming) {
  const list = $(listId);
  list.replaceChildren();
  if (!challenges.length) {
    list.append(el("li", { class: "empty" }, t("none")));
    return;
  }
  for (const challenge of challenges) {
    const actions = incoming
      ? [el("button", { class: "button button-small", type: "button",
            onclick: () => send("challenge_accept", { challenge_id: challenge.id }) }, t("accept")),
         el("button", { class: "button button-small button-quiet", type: "button",
            onclick: () => send("challenge_decline", { challenge_id: challenge.id }) }, t("decline"))]
      : [el("button", { class: "button button-small button-quiet", type: "button",
            onclick: () => send("challenge_cancel", { challenge_id: challenge.id }) }, t("cancel"))];
    list.append(el("li", {},
      el("span", {}, playerLabel(challenge.player), " ", kindPill(challenge.rated)),
      el("span", { class: "seek-actions" }, ...actions)));
  }
}

function renderQuick() {
  const waiting = quickSince !== null;
  $("quick-join").hidden = waiting;
  $("quick-leave").hidden = !waiting;
  clearInterval(quickTimer);
  if (!waiting) {
    $("quick-note").textContent = "";
    return;
  }
  const started = Date.now();
  const tick = () => {
    const seconds = Math.floor((Date.now() - started) / 1000);
    $("quick-note").textContent = t("looking", { seconds });
  };
  tick();
  quickTimer = setInterval(tick, 1000);
}

function renderPersonal(state) {
  myRating = state.me.rating;
  $("my-rating").textContent = state.me.rating;
  $("my-provisional").hidden = !state.me.provisional;
  renderChallenges("incoming", state.incoming, true);
  renderChallenges("outgoing", state.outgoing, false);
  const wasWaiting = quickSince !== null;
  quickSince = state.quick_since_ms;
  if (wasWaiting !== (quickSince !== null)) renderQuick();
  $("live-banner").hidden = !state.live_match;
  if (state.live_match) $("live-link").href = state.live_match;
}

function onMessage(message) {
  switch (message.type) {
    case "lobby":
      if (message.seq < lastSeq.lobby) return;
      lastSeq.lobby = message.seq;
      renderLobby(message);
      break;
    case "personal":
      if (message.seq < lastSeq.personal) return;
      lastSeq.personal = message.seq;
      renderPersonal(message);
      break;
    case "match_started":
      toast(t("match_starting"));
      window.location.assign(message.url);
      break;
    case "error":
      toast(message.message ?? message.reason ?? message.code);
      break;
    default:
      break;
  }
}

function connect() {
  const scheme = window.location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${window.location.host}${root.dataset.wsPath}`);
  $("conn-dot").dataset.state = "connecting";
  socket.addEventListener("open", () => {
    retryMs = 500;
    clearInterval(connect.ping);
    // Keeps this page counted as present (a silent socket stops counting after 90 s).
    connect.ping = setInterval(() => send("ping"), 25000);
    $("conn-dot").dataset.state = "open";
    $("conn-text").textContent = t("live");
  });
  socket.addEventListener("message", (event) => onMessage(JSON.parse(event.data)));
  socket.addEventListener("close", () => {
    clearInterval(connect.ping);
    $("conn-dot").dataset.state = "closed";
    $("conn-text").textContent = t("reconnecting");
    lastSeq = { lobby: 0, personal: 0 };
    setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 10000);
  });
}

function numberOrNull(value) {
  return value === "" ? null : Number.parseInt(value, 10);
}

$("seek-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  send("seek_create", {
    rated: form.get("rated") === "on",
    rating_min: numberOrNull(form.get("rating_min")),
    rating_max: numberOrNull(form.get("rating_max")),
  });
});

$("challenge-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  send("challenge_create", { username: String(form.get("username")).trim(), rated: form.get("rated") === "on" });
  event.target.reset();
});

$("quick-join").addEventListener("click", () => send("quick_join"));
$("quick-leave").addEventListener("click", () => send("quick_leave"));
$("hotseat-start").addEventListener("click", () => send("hotseat_start"));
$("computer-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  send("computer_start", { level: String(form.get("level")), rated: form.get("rated") === "on" });
});

connect();
