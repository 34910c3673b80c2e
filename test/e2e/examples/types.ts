// The shape of a fixture: what an example needs to run (see fixtures.ts for the table).
import type { ExampleResult } from './run.js';
import type { Sandbox, WorldName } from './world.js';

export interface Fixture {
  /** The server it runs against (default 'demo'; 'live': prod holds only live agents). */
  world?: WorldName;
  /** 'none': an empty config directory (not logged in). Default: logged in as admin on prod. */
  login?: 'none';
  /** Files created before it runs: relative to its working directory, or under its home (`~/`). */
  files?: Record<string, string>;
  /** State the example needs, made through the admin API or a CLI login; shell variables in sb.env. */
  setup?: (sb: Sandbox) => void | Promise<void>;
  stdin?: string | ((sb: Sandbox) => string);
  /** Run at a pseudo-terminal: each prompt (waited for) and what the user types. */
  terminal?: [RegExp, string | ((sb: Sandbox, screen: string) => string)][];
  /** Runs until interrupted: Ctrl-C once this is printed (exit 0 or 130). */
  stop?: RegExp;
  /** What happens meanwhile, once it started (an event a follower waits for). */
  during?: (sb: Sandbox) => Promise<void>;
  /** Shell commands run inside the namespaces before the example (a failure fails the run). */
  prelude?: (sb: Sandbox) => string;
  /** Clean-up after the run, whatever happened (a service the prelude started). */
  after?: (sb: Sandbox) => Promise<void> | void;
  /** 'mount': /etc, /var and /opt are overlays in the sandbox; 'net': a loopback of its own. */
  namespaces?: ('mount' | 'net')[];
  /** Text of the example that cannot be run as it is here, each with why and what replaces it. */
  rewrite?: { from: string; to: (sb: Sandbox) => string; why: string }[];
  /** Exit codes the example documents (default 0), and why. */
  exit?: { code: number[]; why: string };
  /**
   * Not runnable yet, and why: the test then expects it to fail, and fails once it works (so the
   * mark is removed). Each one is listed in the examples' status.
   */
  pending?: string;
  /** What else the example must have done (a file written, state on the server). */
  check?: (r: ExampleResult, sb: Sandbox) => void | Promise<void>;
}
