// The line every generated file starts with, so nobody edits one by hand.
export const GENERATED_NOTE = ['Generated from the command tree by `npm run gen` (scripts/gen.mjs): do not edit.'];
