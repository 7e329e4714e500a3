/**
 * Time as the code that waits sees it: a clock and one-shot timers. Production passes the real
 * ones; tests pass `ManualTimers` (tests/doubles) and move time themselves, so what happens
 * after a wait is asserted without waiting.
 */
export type TimerHandle = ReturnType<typeof setTimeout>;

export interface Timers {
  now(): number;
  setTimeout(run: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
}

export const realTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (handle) => clearTimeout(handle),
};
