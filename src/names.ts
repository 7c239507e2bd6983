/**
 * The one rule for names and uids chosen by users: application and endpoint uids, event
 * type names, feature flags. 1-256 characters of a-z A-Z 0-9 - _ . (Svix's rule).
 */

/** The characters a name may hold, as a regular-expression character class body. */
export const NAME_CHARACTERS = "a-zA-Z0-9\\-_.";
export const NAME_MAX_LENGTH = 256;

/** The JSON-schema `pattern` of a name (length is checked by minLength / maxLength). */
export const NAME_PATTERN = `^[${NAME_CHARACTERS}]+$`;

/** Says in words what NAME_PATTERN says, for error details. */
export const NAME_RULE = `1-${NAME_MAX_LENGTH} characters of a-z A-Z 0-9 - _ .`;

const NAME = new RegExp(`^[${NAME_CHARACTERS}]{1,${NAME_MAX_LENGTH}}$`);

/** True when `value` is a valid name or uid. */
export const isName = (value: string): boolean => NAME.test(value);
