// Log sinks: clone (4.18) plus list/create/delete (contract.md 4.18), edit and test (issue 28), all super-admin.
import { Type } from '@sinclair/typebox';
import { callerOf, type App } from './request.js';
import type { Deps } from '../context.js';
import { LogSink, MessageResponse, SinkCloneBody, SinkCreateBody, SinkEditBody, SinksListQuery, SinkTestResult } from '../../api/index.js';
import { RULES } from '../permissions.js';
import { cloneSinks, createSink, deleteSink, listSinks } from '../services/delivery/sinks.js';
import { editSink, testSink } from '../services/delivery/sink-edit.js';

export function sinksRoutes(app: App, deps: Deps): void {
  app.get(
    '/api/v1/log-sinks',
    { config: { rule: RULES.sinks }, schema: { querystring: SinksListQuery, response: { 200: Type.Array(LogSink) } } },
    async (req) => listSinks(deps, req.query.environment_id),
  );
  app.post(
    '/api/v1/log-sinks',
    { config: { rule: RULES.sinks }, schema: { body: SinkCreateBody, response: { 200: LogSink } } },
    async (req) => createSink(deps, callerOf(req), req.body, req.ip),
  );
  app.post(
    '/api/v1/log-sinks/clone',
    { config: { rule: RULES.sinks }, schema: { body: SinkCloneBody, response: { 200: Type.Array(LogSink) } } },
    async (req) => cloneSinks(deps, callerOf(req), req.body, req.ip),
  );
  app.delete(
    '/api/v1/log-sinks/:id',
    { config: { rule: RULES.sinks }, schema: { params: Type.Object({ id: Type.String() }), response: { 200: MessageResponse } } },
    async (req) => ({ message: await deleteSink(deps, callerOf(req), req.params.id, req.ip) }),
  );
  app.patch(
    '/api/v1/log-sinks/:id',
    {
      config: { rule: RULES.sinks },
      schema: { params: Type.Object({ id: Type.String() }), body: SinkEditBody, response: { 200: LogSink } },
    },
    async (req) => editSink(deps, callerOf(req), req.params.id, req.body, req.ip),
  );
  app.post(
    '/api/v1/log-sinks/:id/test',
    { config: { rule: RULES.sinks }, schema: { params: Type.Object({ id: Type.String() }), response: { 200: SinkTestResult } } },
    async (req) => testSink(deps, callerOf(req), req.params.id, req.ip),
  );
}
