// What kinesis and firehose share (records.ts): each log line (as the agent sent it, plus "\n", as Fleet does: Firehose
// concatenates records) as one record, within AWS's limits: Kinesis PutRecords at most 500
// records and 5 MiB a call, Firehose PutRecordBatch at most 500 records and 4 MiB; a record at
// most 1,000 KiB (Fleet's bound, under AWS's 1 MiB). A larger record is rejected (counted and
// audited), never retried. Kinesis records are keyed by the node's host identifier (each host's
// lines stay ordered in one shard). Only the records the service reports failed
// (ProvisionedThroughputExceeded, ServiceUnavailable, InternalFailure) are retried.
import { Type } from '@sinclair/typebox';
import type { SendResult, Sink, SinkEntry } from '../sink.js';
import { awsError } from './aws.js';

export const MAX_RECORD = 1000 * 1024;
export const MAX_RECORDS = 500;

export const awsProps = {
  region: Type.Optional(Type.String()),
  endpoint: Type.Optional(Type.String()),
  access_key_id: Type.Optional(Type.String()),
  secret_access_key: Type.Optional(Type.String()),
};

export interface Call {
  /** Sends records (data, key) and returns per record the error code, or undefined when stored. */
  put(records: { data: Buffer; key: string }[]): Promise<(string | undefined)[]>;
  close(): void;
}

/** Splits entries into calls within the limits, sends them, and maps failures back to entries. */
export class RecordSink implements Sink {
  constructor(
    private readonly call: Call,
    private readonly maxCallBytes: number,
    private readonly what: string,
  ) {}

  async send(batch: SinkEntry[]): Promise<SendResult> {
    const rejected: NonNullable<SendResult['rejected']> = [];
    const retry: NonNullable<SendResult['retry']> = [];
    const groups: { index: number; data: Buffer; key: string }[][] = [];
    let size = 0;
    batch.forEach((e, index) => {
      const data = Buffer.from(`${e.line}\n`, 'utf8');
      const key = (e.hostIdentifier || e.hostname || '-').slice(0, 256);
      const bytes = data.length + Buffer.byteLength(key);
      if (bytes > MAX_RECORD) {
        rejected.push({ index, error: `${bytes} bytes: over the 1,000 KiB record bound` });
        return;
      }
      const last = groups[groups.length - 1];
      if (!last || last.length >= MAX_RECORDS || size + bytes > this.maxCallBytes) {
        groups.push([{ index, data, key }]);
        size = bytes;
      } else {
        last.push({ index, data, key });
        size += bytes;
      }
    });
    let bytes = 0;
    let stored = 0;
    for (const [n, group] of groups.entries()) {
      let codes: (string | undefined)[];
      try {
        codes = await this.call.put(group);
        if (codes.length !== group.length) throw new Error(`answered ${codes.length} results for ${group.length} records`);
      } catch (e) {
        const err = awsError(this.what, e);
        if (n === 0) throw err;
        for (const g of groups.slice(n)) for (const r of g) retry.push({ index: r.index, error: err.message });
        break;
      }
      codes.forEach((code, i) => {
        const r = group[i];
        if (code) retry.push({ index: r.index, error: code });
        else {
          stored++;
          bytes += r.data.length;
        }
      });
    }
    const answer = `${stored} records stored${retry.length ? `, ${retry.length} failed (${retry[0].error})` : ''}`;
    return { bytes, answer, ...(retry.length ? { retry } : {}), ...(rejected.length ? { rejected } : {}) };
  }

  close(): Promise<void> {
    this.call.close();
    return Promise.resolve();
  }
}
