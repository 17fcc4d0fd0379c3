// The API error family: one ApiError(type, code, message, param?) maps to the error envelope.
// Pure: the HTTP layer turns these into responses; anything else becomes a 500 internal_error.
export type ErrorType =
  | 'authentication_error' | 'permission_error' | 'not_found' | 'validation_error'
  | 'insufficient_credits' | 'idempotency_error' | 'rate_limit_error' | 'api_error';

const STATUS: Record<ErrorType, number> = {
  authentication_error: 401,
  permission_error: 403,
  not_found: 404,
  validation_error: 422,
  insufficient_credits: 402,
  idempotency_error: 409,
  rate_limit_error: 429,
  api_error: 500,
};

export class ApiError extends Error {
  readonly status: number;
  constructor(readonly type: ErrorType, readonly code: string, message: string, readonly param?: string, status?: number) {
    super(message);
    this.status = status ?? STATUS[type];
  }
}

export const invalid = (param: string, message: string, code = 'invalid_parameter') =>
  new ApiError('validation_error', code, message, param);
export const notFound = (resource: string) =>
  new ApiError('not_found', `${resource}_not_found`, `No such ${resource.replace(/_/g, ' ')}.`);
