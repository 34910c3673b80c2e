// The destination modules this server delivers to, one per sink type (issue 28). A type of
// SinkTypes without a module here is refused when a sink of it is added or enabled (400: not
// supported by this server), never accepted and dropped. Modules import their client libraries
// inside open(), so listing them here costs nothing at start.
import type { Destination } from '../sink.js';
import { elastic } from './elastic.js';
import { file } from './file.js';
import { firehose } from './firehose.js';
import { graylog } from './graylog.js';
import { http } from './http.js';
import { kafka } from './kafka.js';
import { kinesis } from './kinesis.js';
import { logstash } from './logstash.js';
import { s3 } from './s3.js';
import { splunk } from './splunk.js';
import { stdout } from './stdout.js';
import { syslog } from './syslog.js';

const DESTINATIONS: Record<string, Destination> = {
  file,
  http,
  stdout,
  syslog,
  kafka,
  elastic,
  s3,
  kinesis,
  firehose,
  splunk,
  graylog,
  logstash,
};

/** The module of a sink type, if this server delivers to it. */
export function destinationOf(type: string): Destination | undefined {
  return Object.hasOwn(DESTINATIONS, type) ? DESTINATIONS[type] : undefined;
}

/** The types this server delivers to. */
export function deliveredTypes(): string[] {
  return Object.keys(DESTINATIONS);
}

/** The one-line refusal for a type without a module. */
export function unsupportedType(type: string): string {
  return `sink type ${type} is not supported by this server (supported: ${deliveredTypes().join(', ')})`;
}
