/**
 * null while dist/mta.mjs is fresh; otherwise why it may not run: 'absent' (no bundle, or no list of its inputs) or
 * the first source file newer than it (or gone since), relative to the checkout. `root`: the checkout's URL (a
 * folder, ending in /), this one by default.
 */
export function bundleStaleness(root?: URL): string | null;
