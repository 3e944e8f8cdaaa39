// The two match clocks, ticked locally between the server's messages (docs/protocol.md,
// "Showing a ticking clock"): the server's view says whose clock runs, since when, with what
// delay and deadline; this file only subtracts the time gone since then.
import { sound } from "./sound.js";

const LOW_BANK_MS = 10_000;
let lastTickSecond = null; // the whole second of your low bank last ticked aloud

export function formatBank(ms) {
  const tenths = Math.floor(Math.max(0, ms) / 100);
  const minutes = Math.floor(tenths / 600);
  const seconds = Math.floor((tenths % 600) / 10);
  return `${minutes}:${String(seconds).padStart(2, "0")}.${tenths % 10}`;
}

// Bank and delay left for `seat` at `nowMs` (server time); delay is null unless its clock runs.
function reading(view, seat, nowMs) {
  const clock = view.clock;
  const running = clock.running && clock.seat === seat;
  if (!running) return { running, bankMs: view.banks_ms[seat], delayMs: null };
  const elapsed = Math.max(0, nowMs - clock.turn_start_ms);
  return {
    running,
    bankMs: Math.max(0, view.banks_ms[seat] - Math.max(0, elapsed - clock.delay_ms)),
    delayMs: Math.max(0, clock.delay_ms - elapsed),
  };
}

// Draw both clocks into their seat panels; `me` is your seat (its low bank ticks, if sound is on).
export function tickClocks(view, panels, nowMs, me) {
  for (const panel of panels) {
    const seat = Number(panel.dataset.seat);
    const { running, bankMs, delayMs } = reading(view, seat, nowMs);
    const bankText = formatBank(bankMs);
    const bankNode = panel.querySelector(".bank");
    if (bankNode.textContent !== bankText) bankNode.textContent = bankText;
    const delayNode = panel.querySelector(".delay");
    const delayText = delayMs === null ? "" : `+${(delayMs / 1000).toFixed(1)} s`;
    if (delayNode.textContent !== delayText) delayNode.textContent = delayText;
    const low = bankMs < LOW_BANK_MS && !view.result;
    panel.classList.toggle("low-bank", low);
    panel.querySelector(".warn").hidden = !low;
    panel.classList.toggle("running", running);
    if (running && low && seat === me && delayMs === 0) {
      const second = Math.ceil(bankMs / 1000);
      if (second !== lastTickSecond) {
        lastTickSecond = second;
        sound.tick();
      }
    }
  }
}
