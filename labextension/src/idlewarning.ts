/**
 * When to tell the user, as a JupyterLab notification, that the idle rule is about to act on
 * one of their clusters: once, when its verdict (decided by the server, `usage.idle_action`)
 * turns to a warning — not again for each message while it stays one, and again after the
 * cluster was busy and went idle anew.
 */
import type { Cluster } from './api';
import { dwTrans } from './i18n';
import { ruleText } from './shared/usage_bar.js';

function warned(cluster: Cluster | null | undefined): boolean {
  return Boolean(cluster?.usage?.idle_action?.warning);
}

/** The notification's text when `after` newly warns (else null). */
export function idleWarning(before: Cluster | undefined, after: Cluster | null): string | null {
  if (!after || !warned(after) || warned(before)) {
    return null;
  }
  return dwTrans().__('%1: %2', after.name, ruleText(after.usage));
}
