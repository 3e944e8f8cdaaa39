// Optional sounds: a click on each play, a tick each second under 10 s of your bank. Off until
// the player turns them on; the choice is remembered in this browser (localStorage). Browsers
// let a page make sound only after a gesture: the audio starts on the toggle's click, or (when
// remembered from before) on the first tap or key on the page.
const STORAGE_KEY = "sb-sound";
let context = null;

function wake() {
  context = context || new AudioContext();
  context.resume();
}

function beep(frequency, durationMs, volume) {
  if (!sound.on || !context) return;
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
    if (value) wake();
  },
  click: () => beep(660, 40, 0.08),
  tick: () => beep(1200, 25, 0.05),
};

for (const gesture of ["pointerdown", "keydown"]) {
  document.addEventListener(gesture, () => sound.on && wake(), { once: true });
}
