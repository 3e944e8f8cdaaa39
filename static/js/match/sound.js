// Optional sounds: a click on each play, a tick each second under 10 s of your bank. Off until
// the player turns them on; the choice is remembered in this browser (localStorage).
const STORAGE_KEY = "sb-sound";
let context = null;

function beep(frequency, durationMs, volume) {
  if (!sound.on) return;
  context = context || new AudioContext();
  const oscillator = context.createOscillator();
  const gain = context.createGain();
  oscillator.frequency.value = frequency;
  gain.gain.value = volume;
  oscillator.connect(gain).connect(context.destination);
  oscillator.start();
  oscillator.stop(context.currentTime + durationMs / 1000);
}

export const sound = {
  get on() {
    return localStorage.getItem(STORAGE_KEY) === "on";
  },
  set on(value) {
    localStorage.setItem(STORAGE_KEY, value ? "on" : "off");
  },
  click: () => beep(660, 40, 0.08),
  tick: () => beep(1200, 25, 0.05),
};
