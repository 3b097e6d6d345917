import { authenticator } from 'otplib';

const STEP = 30_000;

/** An operator's authenticator app: its secret, and the codes it has shown (the gateway accepts each once). */
export class Authenticator {
  secret = '';
  private lastStep = -Infinity;

  /**
   * A code of a time step after the last one used, within the one step of drift the gateway allows either way;
   * waiting for the clock when all three are used. The step before only while the current one has 15 s left: a code
   * of the step before is refused the moment the current step ends, and a request that crossed that end on a busy
   * machine was refused (CI, once).
   */
  async code(): Promise<string> {
    for (;;) {
      const t = Date.now();
      const now = Math.floor(t / STEP);
      const step = Math.max(this.lastStep + 1, STEP - (t % STEP) > 15_000 ? now - 1 : now);
      if (step <= now + 1) {
        this.lastStep = step;
        return authenticator.clone({ epoch: step * STEP + 1000 }).generate(this.secret);
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
