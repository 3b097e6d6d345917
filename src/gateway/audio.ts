/**
 * How long an uploaded audio file is, for holds and charges of transcription (whisper-1 bills per second of audio).
 * The upstream bills what it decodes, so a header cannot be believed where it can lie:
 * - uncompressed PCM (WAV, AIFF): the length is the bytes the file holds at the rate its format chunk gives — a data
 *   chunk that claims 1 s while the file holds 10 minutes is 10 minutes;
 * - anything else (mp3, m4a, ogg, webm, flac...): music-metadata reads the length the file says, and the hold is
 *   bounded by the size too — as long as the file could last at the lowest bit rate any codec is used at
 *   (FLOOR_BITS_PER_SECOND) — since a container's header can say less than its frames hold. A file whose format
 *   cannot be read is held at that bound.
 * `measured` is what the file shows (charged when the upstream reports no length); `bound` is what the hold covers.
 */
import { Readable } from 'node:stream';
import { parseStream } from 'music-metadata';
import type { Upload } from '../contract';

/** Opus' lowest rate (6 kbit/s): no codec a transcription upstream takes plays a byte for longer. */
export const FLOOR_BITS_PER_SECOND = 6_000;

export interface AudioLength {
  /** Seconds the file shows (PCM: its bytes at its rate; else its header's word, or the bound when unreadable). */
  measured: number;
  /** Seconds the hold covers: the most the upstream may find in it. */
  bound: number;
}

const lengths = new WeakMap<Upload, AudioLength>();

/** The length of an upload, measured once (the result is kept with it for `lengthOf`). */
export async function measureAudio(u: Upload): Promise<AudioLength> {
  let got = lengths.get(u);
  if (!got) lengths.set(u, (got = await read(u)));
  return got;
}

/** The length measured before (measureAudio); the size's bound if it was not. */
export function lengthOf(u: Upload): AudioLength {
  return lengths.get(u) ?? { measured: bySize(u.size), bound: bySize(u.size) };
}

const WAV_HEADER = 44;
const bySize = (bytes: number) => Math.ceil((bytes * 8) / FLOOR_BITS_PER_SECOND);

async function read(u: Upload): Promise<AudioLength> {
  let format: Awaited<ReturnType<typeof parseStream>>['format'];
  try {
    const stream = Readable.from(u.chunks as Uint8Array[], { objectMode: false }); // bytes, not one object per chunk
    ({ format } = await parseStream(
      stream,
      { mimeType: u.type, size: u.size, path: u.filename },
      { duration: true, skipCovers: true },
    ));
  } catch {
    return { measured: bySize(u.size), bound: bySize(u.size) }; // not audio it can read: the size says the most
  }
  const { sampleRate, numberOfChannels, bitsPerSample, codec, duration } = format;
  const pcm = /^PCM/i.test(codec ?? '') && sampleRate && numberOfChannels && bitsPerSample;
  if (pcm) {
    // The bytes after the smallest header (44: RIFF, fmt and data chunk heads) at the rate of its format chunk.
    const seconds = Math.ceil(Math.max(0, u.size - WAV_HEADER) / ((sampleRate * numberOfChannels * bitsPerSample) / 8));
    return { measured: seconds, bound: seconds };
  }
  const said = Number.isFinite(duration) && duration! > 0 ? Math.ceil(duration!) : 0;
  const bound = Math.max(said, bySize(u.size));
  return { measured: said || bound, bound };
}
