/** Imported first by cli.ts, before any other module loads: see heap.ts. */
import { holdYoungGeneration } from './heap';

holdYoungGeneration();
