// SPDX-License-Identifier: BSD-3-Clause
// Types of lockwatch-reporter (index.js).

/** Reporter counters: lines queued, lines sent in datagrams at least one
 *  destination accepted, datagrams, lines dropped because the queue was
 *  full, lines dropped because every send failed (or because reporting
 *  turned off, or the reporter was replaced, before its settings applied),
 *  lines pending. */
export interface ReporterStats {
  queued: number;
  sent: number;
  datagrams: number;
  droppedQueueFull: number;
  droppedSendFailed: number;
  pending: number;
}

/** Overrides of LOCKWATCH_SAMPLES, LOCKWATCH_KEY_FILE and LOCKWATCH_OWNER. */
export interface ReporterOptions {
  /** `host:port[,host:port...]`, `off` or empty: report nothing. */
  samples?: string;
  /** Path of the shared key ([samples] key_file of the agent). */
  keyFile?: string | null;
  /** The name in the `<process>` part of owner ids, `<name>:<pid>` (default: the hostname). */
  owner?: string | null;
}

export interface Reporter {
  readonly enabled: boolean;
  /** Called with each event on the lock path (tests). */
  tap: ((event: unknown[]) => void) | null;
  flush(): void;
  close(): void;
  /** Resolves once the key file is read and every destination resolved and
   *  connected (or given up), or after 5 s, the reporter still waiting for
   *  them (enabled: lines queue). */
  ready(): Promise<void>;
  stats(): ReporterStats;
}

/** Settings of using(): redlock 5's automaticExtensionThreshold (ms before
 *  the lease ends that the extension is sent; default 500) and redlock's
 *  per-call options (retryCount, retryDelay, retryJitter). */
export interface UsingSettings {
  automaticExtensionThreshold?: number;
  retryCount?: number;
  retryDelay?: number;
  retryJitter?: number;
}

/** The signal passed to using()'s routine: aborted when an automatic
 *  extension failed (the lock is lost); error is the library's LockError. */
export interface UsingSignal extends AbortSignal {
  error?: Error;
}

/** A node-redlock 4 instance after instrumentRedlock(): its own methods,
 *  reporting, plus using(). */
export type InstrumentedRedlock<R> = R & {
  using<T>(resource: string | string[], ttl: number,
           routine: (signal: UsingSignal) => Promise<T>): Promise<T>;
  using<T>(resource: string | string[], ttl: number, settings: UsingSettings,
           routine: (signal: UsingSignal) => Promise<T>): Promise<T>;
};

/** Make a node-redlock 4 instance report its acquires, releases,
 *  extensions and lost leases (patches the instance; returns it). */
export function instrumentRedlock<R extends object>(redlock: R): InstrumentedRedlock<R>;

/** A subclass of a redis-semaphore Mutex (optionsIndex 2) or Semaphore
 *  (optionsIndex 3) class that reports. */
export function withReporting<C extends abstract new (...args: any[]) => any>(Base: C, optionsIndex: number): C;

/** redis-semaphore's Mutex, reporting (same constructor and methods). */
export const Mutex: typeof import('redis-semaphore').Mutex;
/** redis-semaphore's Semaphore, reporting (same constructor and methods). */
export const Semaphore: typeof import('redis-semaphore').Semaphore;

/** Run fn with `party` as the owner party of every acquire inside it
 *  (AsyncLocalStorage, enabled only while such a routine runs); using()
 *  does this for its routine. */
export function runAs<T>(party: string | number, fn: () => T): T;

/** (Re)make the process's reporter with these settings; returns at once
 *  (the key file is read and names resolved asynchronously: ready()). */
export function configure(opts?: ReporterOptions): Reporter;
/** The process reporter's counters. */
export function stats(): ReporterStats;
/** Send what is queued now. */
export function flush(): void;
/** The process's reporter, or null when reporting is off. */
export function reporter(): Reporter | null;
