// The scores of the round on the table: every play that scored, an auction payment and the
// settlement, as the events report them (the points are the server's; nothing is computed here).
import { tileText } from "../board.js";
import { t } from "../i18n.js";

// The points an event moved and to whom, or null: {seat (who received), points, kind, tile}.
// An accepted offer is paid to the player who accepted it.
export function pointsMoved(event) {
  if (event.type === "play" && event.points) {
    return { seat: event.seat, points: event.points, kind: "play", tile: event.tile };
  }
  if (event.type === "accept" && event.paid) {
    return { seat: event.seat, points: event.paid, kind: "auction" };
  }
  if (event.type === "settle" && event.points && event.winner !== null) {
    return { seat: event.winner, points: event.points, kind: event.end };
  }
  return null;
}

export class RoundHistory {
  constructor() {
    this.round = null; // the round the next live event belongs to
    this.entries = new Map(); // round -> [moved, with its event's seq]
    this.seen = new Set(); // seqs of the events counted
  }

  // The first state seen: later events belong to its round.
  begin(round) {
    if (this.round === null) this.round = round;
  }

  add(event) {
    if (this.seen.has(event.seq)) return;
    this.count(this.round, event);
    if (event.type === "settle") this.round += 1; // what follows is the next round's
  }

  // The events before this page opened, from the match record (docs/ARCHIVE.md).
  catchUp(record) {
    for (const round of record.rounds) {
      for (const event of round.events) {
        if (!this.seen.has(event.seq)) this.count(round.number, event);
      }
    }
  }

  count(round, event) {
    this.seen.add(event.seq);
    const moved = pointsMoved(event);
    if (!moved) return;
    if (!this.entries.has(round)) this.entries.set(round, []);
    this.entries.get(round).push({ ...moved, seq: event.seq });
  }

  render(list, title, round, names) {
    title.textContent = t("round_scores", { round });
    const entries = [...(this.entries.get(round) || [])].sort((a, b) => a.seq - b.seq);
    list.replaceChildren();
    if (!entries.length) {
      const empty = document.createElement("li");
      empty.className = "empty";
      empty.textContent = t("no_scores_yet");
      list.append(empty);
      return;
    }
    for (const moved of entries) {
      const item = document.createElement("li");
      item.dataset.seat = String(moved.seat);
      const what = moved.kind === "play" ? tileText(moved.tile) : t(`scored_by_${moved.kind}`);
      item.textContent = t("score_entry", { name: names[moved.seat], points: moved.points, what });
      list.append(item);
    }
  }
}
