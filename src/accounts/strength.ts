/**
 * zxcvbn-ts, as the password rules use it: the common-passwords and diceware lists (49k + 7.8k words) and English
 * advice. Loaded only by the password strength worker (strengthWorker.ts), never by the server's own thread.
 */

/** How hard a password is to guess: zxcvbn's score (0–4) and its advice. */
export interface Strength {
  score: number;
  warning: string | null;
  suggestions: string[];
}

/**
 * Only this many characters are scored. zxcvbn's matchers grow faster than linearly with length (a 64-character
 * keyboard walk took 100 ms of CPU here, 32 characters at most 45 ms), and a password past 32 characters that is not
 * weak in its first 32 is not one an attacker guesses.
 */
export const SCORED_CHARACTERS = 32;

/** The estimator, built from the lists on first use (in the worker). */
export function estimator(): (password: string, userInputs: string[]) => Strength {
  const { ZxcvbnFactory } = require('@zxcvbn-ts/core') as typeof import('@zxcvbn-ts/core');
  const common = require('@zxcvbn-ts/language-common') as typeof import('@zxcvbn-ts/language-common');
  const en = require('@zxcvbn-ts/language-en') as typeof import('@zxcvbn-ts/language-en');
  const factory = new ZxcvbnFactory({
    translations: en.translations,
    graphs: common.adjacencyGraphs,
    dictionary: { ...common.dictionary },
    maxLength: SCORED_CHARACTERS,
    l33tMaxSubstitutions: 8,
  });
  return (password, userInputs) => {
    const r = factory.check(password, userInputs);
    return { score: r.score, warning: r.feedback.warning, suggestions: r.feedback.suggestions };
  };
}
