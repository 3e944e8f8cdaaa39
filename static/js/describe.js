// A board state as text, in the style of the rules page: "Tiles: … Spinner: … Joins: …
// Open places: … Counted: …". Used for the aria-live announcements and the figure captions.
import { tileText } from "./board.js";
import { t } from "./i18n.js";

export const sideName = (side) => t(`side_${side}`);
export const placeText = (place) => `${tileText(place.tile)} (${sideName(place.side)})`;

export function describeLayout(layout) {
  if (!layout.tiles.length) return t("empty_layout");
  const tiles = layout.tiles.map((p) => tileText(p.tile)).join(", ");
  const joins = layout.tiles
    .filter((p) => p.place)
    .map((p) => `${placeText(p.place)} – ${tileText(p.tile)} (${sideName(p.joined)})`);
  const places = layout.places.map((p) => `${tileText(p.tile)} (${sideName(p.side)}, ${p.value})`);
  const counted = layout.counted.map((c) => `${tileText(c.tile)}: ${c.value}`);
  return [
    `${t("tiles")}: ${tiles}.`,
    `${t("spinner")}: ${layout.spinner ? tileText(layout.spinner) : t("none")}.`,
    `${t("joins")}: ${joins.length ? joins.join("; ") : t("none")}.`,
    `${t("open_places")}: ${places.join("; ")}.`,
    `${t("counted")}: ${counted.length ? counted.join("; ") : t("none")}.`,
    `${t("end_total")}: ${layout.end_total}.`,
  ].join(" ");
}

// "Counted: 2 + 3 = 5." as on the rules page's figures.
export function countedSum(layout) {
  const values = layout.counted.map((c) => c.value);
  return `${t("counted")}: ${values.length ? values.join(" + ") : "0"} = ${layout.end_total}.`;
}

// One recorded event as a sentence.
export function describeEvent(event, names) {
  const name = event.seat === null || event.seat === undefined ? "" : names[event.seat];
  switch (event.type) {
    case "play":
      return event.points
        ? t("ev_play_points", { name, tile: tileText(event.tile), points: event.points })
        : t("ev_play", { name, tile: tileText(event.tile) });
    case "draw":
      return event.tile ? t("ev_draw_tile", { name, tile: tileText(event.tile) }) : t("ev_draw", { name });
    case "offer":
      return t("ev_offer", { name, amount: event.amount });
    case "settle":
      return `${t("ev_settle")}: ${event.end === "domino" ? t("domino", { name: names[event.winner] ?? "" }) : t("block")}. ${
        event.points ? t("moved", { points: event.points, name: names[event.winner] }) : t("no_transfer")}`;
    case "start":
      return t("ev_start");
    case "contribute": // its value stays out of the sentence: it is on the deal's proof
      return t(event.from_player === false ? "ev_contribute_server" : "ev_contribute", { name });
    default:
      return t(`ev_${event.type}`, { name });
  }
}
