// The auction for the opening (RULES §6): the standing offer, and your choices as the server
// lists them (`legal.offers`: each allowed amount with what it would cost you after the
// jockey's discount). Quick amounts (the minimum, +5, +10, the most you can afford) beside a
// choice of any amount; Waive set apart from the offers.
import { t } from "../i18n.js";

const $ = (id) => document.getElementById(id);
const QUICK_STEPS = [0, 5, 10]; // above the minimum

// The quick choices among `offers`: the minimum, +5, +10 and the most you can afford.
function quickOffers(offers) {
  if (!offers.length) return [];
  const first = offers[0].amount;
  const wanted = new Set([...QUICK_STEPS.map((step) => first + step), offers[offers.length - 1].amount]);
  return offers.filter((offer) => wanted.has(offer.amount));
}

export function renderAuction(view, page) {
  const panel = $("auction");
  panel.hidden = view.phase !== "auction" && !(view.phase === "handover" && view.auction);
  if (panel.hidden) return;
  const auction = view.auction || { offer: null, offerer: null };
  const names = page.names;
  $("auction-jockey").textContent = view.jockey === null ? "" : `${t("jockey")}: ${names[view.jockey]}`;
  $("auction-offer").textContent = auction.offer === null ? t("no_offer") : t("current_offer", { name: names[auction.offerer], amount: auction.offer });
  const legal = view.legal;
  const offers = legal ? legal.offers : [];
  const controls = $("auction-controls");
  const deciding = legal && (legal.waive || legal.accept || offers.length);
  controls.hidden = !deciding;
  if (!deciding) return;
  $("waive").hidden = !legal.waive;
  const accept = $("accept");
  accept.hidden = !legal.accept;
  if (legal.accept) accept.textContent = t("accept_offer", { amount: auction.offer });
  const verb = auction.offer === null ? "offer" : "raise";
  const quick = $("quick-offers");
  quick.replaceChildren(...quickOffers(offers).map((offer) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "button quick-offer";
    button.dataset.amount = String(offer.amount);
    button.textContent = t(`${verb}_amount`, { amount: offer.amount });
    const cost = document.createElement("small");
    cost.textContent = t("cost_note", { cost: offer.cost });
    button.append(cost);
    button.addEventListener("click", () => page.send({ type: "offer", amount: offer.amount }));
    return button;
  }));
  const form = $("offer-form");
  form.hidden = !offers.length;
  if (offers.length) {
    const select = $("offer-amount");
    const previous = select.value;
    select.replaceChildren(...offers.map((offer) => {
      const option = document.createElement("option");
      option.value = String(offer.amount);
      option.textContent = t("costs", { amount: offer.amount, cost: offer.cost });
      return option;
    }));
    if (previous && select.querySelector(`option[value="${previous}"]`)) select.value = previous;
    $("offer-submit").textContent = t(verb);
    $("discount-note").hidden = page.me() !== view.jockey;
  } else {
    $("discount-note").hidden = true;
  }
}
