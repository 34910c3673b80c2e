// Pagination rules (contract.md section 1), shared by every paginated list.
import { PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, type Page } from '../../api/index.js';
import { badRequest } from '../errors.js';

export interface PageRequest {
  page: number;
  pageSize: number;
  offset: number;
}

function positiveInt(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw badRequest(`${name} must be a positive integer, got "${raw}"`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw badRequest(`${name} must be a positive integer, got "${raw}"`);
  return n;
}

export function parsePage(q: { page?: string; page_size?: string }): PageRequest {
  const page = positiveInt('page', q.page, 1);
  const pageSize = Math.min(positiveInt('page_size', q.page_size, PAGE_SIZE_DEFAULT), PAGE_SIZE_MAX);
  return { page, pageSize, offset: (page - 1) * pageSize };
}

export function pageOf<T>(items: T[], req: PageRequest, total: number): Page<T> {
  return {
    items,
    page: req.page,
    page_size: req.pageSize,
    total_items: total,
    total_pages: total === 0 ? 0 : Math.ceil(total / req.pageSize),
  };
}

/** Escapes % _ and \ for a LIKE pattern used with ESCAPE '\'. */
export function likeContains(s: string): string {
  return `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
