// Serialised bodies of cached list pages (issue 31): a list service answers with the very same
// object while neither its page nor its total changed (nodes: listNodes; audit: listAuditLogs),
// so its JSON text is made once, through the route's response schema, not per request.
import type { FastifyReply } from 'fastify';

const bodies = new WeakMap<object, string>();

/** Sends `page` as JSON, serialised once per page object. */
export function sendPage(reply: FastifyReply, page: object): FastifyReply {
  let body = bodies.get(page);
  if (body === undefined) bodies.set(page, (body = reply.serialize(page) as string));
  return reply.type('application/json; charset=utf-8').send(body as never);
}
