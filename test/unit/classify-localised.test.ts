// Localised reply texts (src/core/reply-rules-localised.ts): in a live reply each language's phrase for the common
// reasons is read as that reason, with no status code to lean on (a generic 5.0.0 / 550 / none). A user-unknown text
// is read as userunknown when the server said it at RCPT (elsewhere Sisimai's rules make it filtered, in any
// language). A bounce notice is read with Sisimai 5.1.0's lists, which know no other language: there the same text
// reads onhold, as Sisimai reads it (docs/inbound.md, "Session 22").
import { expect } from 'chai';
import { classifyBounce } from '../../src/core/classify.js';

const CASES: [string, string, string][] = [
  // [language, text, reason]
  ['de', 'Die Nachricht konnte nicht zugestellt werden: Benutzer unbekannt', 'userunknown'],
  ['de', 'Zustellung fehlgeschlagen: Postfach voll', 'mailboxfull'],
  ['de', 'Ihre Nachricht ist zu groß (max. 10 MB); Nachricht zu groß', 'mesgtoobig'],
  ['de', 'Ihre Nachricht wurde als Spam erkannt und abgewiesen', 'spamdetected'],
  ['de', 'Zustellung nicht möglich: Domain nicht gefunden', 'hostunknown'],
  ['fr', "Le message n'a pas pu être remis : utilisateur inconnu", 'userunknown'],
  ['fr', 'Remise impossible : boîte aux lettres pleine', 'mailboxfull'],
  ['fr', 'Message trop volumineux pour ce destinataire', 'mesgtoobig'],
  ['fr', 'Votre message a été considéré comme spam', 'spamdetected'],
  ['fr', 'Échec de la remise : domaine introuvable', 'hostunknown'],
  ['es', 'No se pudo entregar el mensaje: usuario desconocido', 'userunknown'],
  ['es', 'El buzón está lleno', 'mailboxfull'],
  ['es', 'El mensaje es demasiado grande', 'mesgtoobig'],
  ['es', 'Su mensaje fue detectado como spam', 'spamdetected'],
  ['es', 'Error de entrega: dominio no encontrado', 'hostunknown'],
  ['nl', 'Het bericht kon niet worden afgeleverd: onbekende gebruiker', 'userunknown'],
  ['nl', 'De mailbox is vol', 'mailboxfull'],
  ['nl', 'Het bericht is te groot', 'mesgtoobig'],
  ['nl', 'Uw bericht is als spam herkend', 'spamdetected'],
  ['nl', 'Bezorging mislukt: domein niet gevonden', 'hostunknown'],
  ['it', 'Impossibile consegnare il messaggio: utente sconosciuto', 'userunknown'],
  ['it', 'La casella di posta è piena', 'mailboxfull'],
  ['it', 'Il messaggio è troppo grande', 'mesgtoobig'],
  ['it', 'Il messaggio è stato rilevato come spam', 'spamdetected'],
  ['it', 'Consegna non riuscita: dominio inesistente', 'hostunknown'],
  ['lv', 'Vēstuli nevarēja piegādāt: nezināms lietotājs', 'userunknown'],
  ['lv', 'Adresāta pastkaste ir pilna', 'mailboxfull'],
  ['lv', 'Ziņojums ir pārāk liels', 'mesgtoobig'],
  ['pt', 'Não foi possível entregar a mensagem: usuário desconhecido', 'userunknown'],
  ['pt', 'A caixa postal cheia do destinatário', 'mailboxfull'],
  ['pl', 'Nie można dostarczyć wiadomości: użytkownik nie istnieje', 'userunknown'],
  ['pl', 'Skrzynka odbiorcza jest pełna', 'mailboxfull'],
];

describe('classifyBounce: localised reply texts', () => {
  for (const [lang, text, reason] of CASES)
    it(`${lang}: "${text}" → ${reason}`, () => {
      for (const status of ['5.0.0', null]) {
        const r = classifyBounce({
          status,
          replycode: status ? '550' : null,
          diagnostic: text,
          action: 'failed',
          command: 'RCPT',
          live: true,
        });
        expect(r.reason, `status ${status}`).to.equal(reason);
        const notice = classifyBounce({ status, replycode: status ? '550' : null, diagnostic: text, command: 'RCPT' });
        expect(notice.reason, `notice, status ${status}`).to.equal('onhold');
      }
    });
});
