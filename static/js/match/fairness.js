// Fair deals (docs/fairness.md, /fairness/): this device's random contribution to each deal,
// and the proof of each finished round. The server's engine checks that the tiles follow from
// the seed and both contributions; this page checks, itself, that the revealed seed is the one
// whose commitment it was shown before the deal.
import { t } from "../i18n.js";

const CONTRIBUTION_BYTES = 32;
const sent = new Set(); // "round:seat", so a re-render never sends a contribution twice
const commitments = new Map(); // round -> the commitment this page saw while the deal was sealed
let proofs = null; // round -> {seed, commitment, contributions, verified}, from deals.json

function hex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function bytesOf(hexDigits) {
  return new Uint8Array(hexDigits.match(/../g).map((pair) => Number.parseInt(pair, 16)));
}

// While a round waits for contributions, send this device's: the player's own seat, or in
// pass-and-play both seats (one device contributes for both; its view while dealing is no
// seat's, so the seats come from the page: the ones this user holds). Spectators send nothing.
export function contributeIfDue(view, page) {
  if (view.phase !== "dealing") return;
  const seats = page.hotseat ? page.seats : view.legal && view.legal.contribute ? [page.me()] : [];
  for (const seat of seats) {
    const key = `${view.round}:${seat}`;
    // Each seat has an entry; its ``source`` is null until that seat's contribution is in.
    const entry = view.contributions ? view.contributions[seat] : null;
    if (!entry || entry.source !== null || sent.has(key)) continue;
    sent.add(key);
    const value = hex(crypto.getRandomValues(new Uint8Array(CONTRIBUTION_BYTES)));
    page.send(page.hotseat ? { type: "contribute", seat, value } : { type: "contribute", value });
  }
}

export function rememberCommitment(view) {
  if (view.commitment && !commitments.has(view.round)) commitments.set(view.round, view.commitment);
}

async function seedMatches(seed, commitment) {
  if (!crypto.subtle) return null; // not a secure context: the server's word and /fairness/
  const digest = await crypto.subtle.digest("SHA-256", bytesOf(seed));
  return hex(new Uint8Array(digest)) === commitment;
}

async function loadProofs(page, round) {
  if (proofs && proofs.has(round)) return proofs;
  const response = await fetch(`/match/${page.matchId}/deals.json`, { headers: { Accept: "application/json" } });
  const body = await response.json();
  proofs = new Map(body.deals.map((deal) => [deal.round, deal]));
  return proofs;
}

function contributionLine(contribution, names) {
  const who = names[contribution.seat];
  const source = contribution.from_player ? t("contributed_by_player", { name: who }) : t("contributed_by_server", { name: who });
  return `${source}: `;
}

// Fill ``box`` (an element of the round-end card) with the proof of ``round``.
export async function showProof(box, round, page) {
  box.className = "deal-proof";
  box.dataset.round = String(round);
  box.textContent = t("deal_checking");
  const deal = (await loadProofs(page, round)).get(round);
  if (box.dataset.round !== String(round)) return; // the box shows another round by now
  if (!deal) {
    box.textContent = "";
    return;
  }
  const seen = commitments.get(round);
  const selfCheck = seen ? await seedMatches(deal.seed, seen) : await seedMatches(deal.seed, deal.commitment);
  if (box.dataset.round !== String(round)) return;
  const verified = deal.verified && selfCheck !== false && (!seen || seen === deal.commitment);
  box.dataset.verified = String(verified);
  const verdict = document.createElement("span");
  verdict.className = "deal-verdict";
  verdict.textContent = verified ? t("deal_verified") : t("deal_not_verified");
  const seed = document.createElement("div");
  seed.append(`${t("deal_seed")}: `, Object.assign(document.createElement("code"), { textContent: deal.seed }));
  const lines = (deal.contributions || []).map((contribution) => {
    const line = document.createElement("div");
    line.append(contributionLine(contribution, page.names), Object.assign(document.createElement("code"), { textContent: contribution.value }));
    return line;
  });
  const recipe = Object.assign(document.createElement("a"), { href: "/fairness/", textContent: t("deal_recipe") });
  box.replaceChildren(verdict, " ", recipe, seed, ...lines);
}
