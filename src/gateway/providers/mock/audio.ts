/**
 * Short, valid audio for the mock provider's speech, in the formats OpenAI's speech comes in that need no encoder:
 * a quiet 440 Hz tone as WAV or as raw PCM (24 kHz, 16-bit little-endian, mono: OpenAI's `pcm`), or MP3 frames of
 * silence. Players and decoders take each of them as what its media type says.
 */

const RATE = 24_000;
const AMPLITUDE = 3_000;

/**
 * One MPEG-2 Layer III frame at 24 kHz, 32 kbit/s, mono, no CRC (header FF F3 44 C0) whose side information and
 * main data are zeros: 576 samples (24 ms) of silence, 72 × 32000 / 24000 = 96 bytes.
 */
const MP3_FRAME = Buffer.concat([Buffer.from([0xff, 0xf3, 0x44, 0xc0]), Buffer.alloc(92)]);
const MP3_FRAME_MS = 24;

export type MockFormat = 'mp3' | 'wav' | 'pcm';

/** Whether the mock makes audio of this `response_format`. */
export const mockFormat = (f: string): f is MockFormat => f === 'mp3' || f === 'wav' || f === 'pcm';

/** `ms` milliseconds of audio in `format`. */
export function mockAudio(format: MockFormat, ms: number): Buffer {
  if (format === 'mp3')
    return Buffer.concat(Array.from({ length: Math.max(1, Math.ceil(ms / MP3_FRAME_MS)) }, () => MP3_FRAME));
  const pcm = tone(ms);
  return format === 'wav' ? Buffer.concat([wavHeader(pcm.length), pcm]) : pcm;
}

function tone(ms: number): Buffer {
  const samples = Math.round((RATE * ms) / 1000);
  const out = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++)
    out.writeInt16LE(Math.round(AMPLITUDE * Math.sin((2 * Math.PI * 440 * i) / RATE)), i * 2);
  return out;
}

/** The 44-byte RIFF header of 16-bit mono PCM at RATE, for `bytes` of samples. */
function wavHeader(bytes: number): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + bytes, 4);
  h.write('WAVEfmt ', 8, 'ascii');
  h.writeUInt32LE(16, 16); // the size of the format chunk
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(RATE, 24);
  h.writeUInt32LE(RATE * 2, 28); // bytes a second
  h.writeUInt16LE(2, 32); // bytes a sample
  h.writeUInt16LE(16, 34); // bits a sample
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(bytes, 40);
  return h;
}
