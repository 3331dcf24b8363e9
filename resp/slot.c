/*
 * slot.c - Redis Cluster hash slots.
 *
 * slot = CRC16(key) mod 16384, CRC16-CCITT in its XMODEM variant (poly 0x1021,
 * init 0, no reflection, no final xor; check value for "123456789" is 0x31C3).
 * Hash tags: if the key holds a '{' and a later '}' with at least one byte
 * between them, only the bytes between the first '{' and the first '}' after it
 * are hashed, so "{user1}.a" and "{user1}.b" share a slot, "foo{}{bar}" hashes
 * whole and "foo{{bar}}zap" hashes "{bar". (Redis Cluster specification, "Keys
 * distribution model".)
 *
 * The incremental hasher exists because keys may arrive split across packets
 * and may be long: it keeps two running CRCs (whole key, and tag so far) and
 * never needs the key in one piece.
 */
#include "resp/resp.h"

/* CRC16-XMODEM table, built at compile time from the polynomial would need a
 * generator; a 256-entry table computed once at first use is as fast. */
static uint16_t crc_table[256];
static int crc_table_ready;

/* Fill crc_table for polynomial 0x1021 (MSB first). */
static void crc_table_init(void)
{
    for (unsigned i = 0; i < 256; i++) {
        uint16_t crc = (uint16_t)(i << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
        crc_table[i] = crc;
    }
    crc_table_ready = 1;
}

/* Continue a CRC16-XMODEM over n bytes. */
static uint16_t crc16_update(uint16_t crc, const uint8_t *p, size_t n)
{
    if (!crc_table_ready)
        crc_table_init();
    for (size_t i = 0; i < n; i++)
        crc = (uint16_t)((crc << 8) ^ crc_table[((crc >> 8) ^ p[i]) & 0xff]);
    return crc;
}

void resp_slot_init(resp_slot_hasher *h)
{
    h->crc_all = 0;
    h->crc_tag = 0;
    h->tag_len = 0;
    h->state = 0;
}

/* Feed the next piece of a key. The tag CRC only covers bytes after the first
 * '{' up to (not including) the first '}' after it. */
void resp_slot_update(resp_slot_hasher *h, const uint8_t *p, size_t n)
{
    h->crc_all = crc16_update(h->crc_all, p, n);
    if (h->state == 2)
        return;
    size_t i = 0;
    if (h->state == 0) {
        while (i < n && p[i] != '{')
            i++;
        if (i == n)
            return;
        h->state = 1;
        i++; /* past the '{' */
    }
    size_t start = i;
    while (i < n && p[i] != '}')
        i++;
    h->crc_tag = crc16_update(h->crc_tag, p + start, i - start);
    h->tag_len += (uint32_t)(i - start);
    if (i < n)
        h->state = 2; /* found the closing '}' */
}

uint16_t resp_slot_final(const resp_slot_hasher *h)
{
    if (h->state == 2 && h->tag_len > 0)
        return h->crc_tag & 16383;
    return h->crc_all & 16383;
}

uint16_t resp_key_slot(const uint8_t *key, size_t len)
{
    resp_slot_hasher h;
    resp_slot_init(&h);
    resp_slot_update(&h, key, len);
    return resp_slot_final(&h);
}
