/**
 * Tests that need a tool from outside Node (podman, nginx) skip without it on a developer's machine,
 * saying why; in CI they must run, so there a reason to skip is the test's failure instead. CI is the
 * CI variable as CI services set it (and .ci/run does): anything but unset, empty, `0` or `false`.
 */
import assert from 'node:assert/strict';

export const IN_CI = !['', '0', 'false'].includes((process.env.CI ?? '').trim().toLowerCase());

/** The test's `skip` option: the reason outside CI; in CI, never (the test runs and fails on it). */
export function skipOutsideCi(reason: string | false): string | false {
  return IN_CI ? false : reason;
}

/** First thing in such a test: in CI, a missing tool fails it with the reason it would have skipped for. */
export function assertNothingMissing(reason: string | false): void {
  assert.equal(reason, false, `CI must run this test, but: ${reason || ''}`);
}
