// Where an environment's enrollment stands (issue 27), for env list/show/create/edit: open until
// someone closes it, open until a time, closing (within a day), or closed. The state is the API's
// rule (src/api, which stats uses on the server); this adds the words, and osctrl's rule, where
// only accept_enrolls stops agents.
import { enrollmentStateOf, type EnrollmentState } from '../../api/index.js';
import { isNever, relativeTime } from '../../output/index.js';

export function enrollmentOf(
  e: { accept_enrolls: boolean; enroll_expire: string },
  now = new Date(),
  expiryStopsAgents = true,
): { state: EnrollmentState; text: string } {
  const state = enrollmentStateOf(e.accept_enrolls, e.enroll_expire, now);
  if (!e.accept_enrolls) return { state, text: 'closed (enrolls turned off)' };
  const never = !e.enroll_expire || isNever(e.enroll_expire) || Number.isNaN(Date.parse(e.enroll_expire));
  if (state === 'open' && never) return { state, text: 'open until closed' };
  // osctrl (Traits.enrollExpiryStopsAgents false): the expiry ends only the enroll.sh/.ps1 links.
  if (!expiryStopsAgents) {
    const links = state === 'closed' ? `expired ${relativeTime(e.enroll_expire, now)}` : `until ${e.enroll_expire}`;
    return { state: 'open', text: `open until closed (the enroll.sh/enroll.ps1 links ${links}; agents with the secret enroll either way)` };
  }
  if (state === 'closed') return { state, text: `closed ${relativeTime(e.enroll_expire, now)} (window ended ${e.enroll_expire})` };
  if (state === 'closing') return { state, text: `closing ${relativeTime(e.enroll_expire, now)} (${e.enroll_expire})` };
  return { state, text: `open until ${e.enroll_expire} (${relativeTime(e.enroll_expire, now)})` };
}
