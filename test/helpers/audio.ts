/** Audio files for the tests, made here: a WAV of a given length, whose header may lie about it. */

const RATE = 8000;

/**
 * A WAV of `seconds` of 8 kHz 8-bit mono (a 440 Hz tone), whose data chunk claims `claimed` seconds (a header that
 * lies when they differ).
 */
export function wav(seconds: number, claimed = seconds): Buffer {
  const n = Math.round(seconds * RATE);
  const b = Buffer.alloc(44 + n);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + Math.round(claimed * RATE), 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20); // PCM
  b.writeUInt16LE(1, 22); // mono
  b.writeUInt32LE(RATE, 24);
  b.writeUInt32LE(RATE, 28); // bytes a second
  b.writeUInt16LE(1, 32);
  b.writeUInt16LE(8, 34);
  b.write('data', 36);
  b.writeUInt32LE(Math.round(claimed * RATE), 40);
  const tone = Buffer.alloc(RATE); // one second, repeated (a loop over ten minutes of samples takes seconds)
  for (let i = 0; i < RATE; i++) tone[i] = 128 + Math.round(100 * Math.sin((2 * Math.PI * 440 * i) / RATE));
  if (n) b.fill(tone, 44);
  return b;
}
